"""`ludo tournament`: export an arena's tournament file, verify one offline (docs/arenas.md).

- `ludo tournament export ID [-o FILE]` writes the file of an arena that is over (stdout
  by default); an arena still playing is refused (exit 1): its matches' seeds are secret.
- `ludo tournament verify FILE [--json]` checks a file offline: exit 0 when every check
  holds, else 1 and the first failing check, with the arena event or the match it is at
  (a file that is not a tournament file fails the check `file`).

export uses `DATABASE_URL` (unset: the embedded PostgreSQL); verify needs only the file.
Usage problems (an unknown arena id, bad arguments) exit 2.
"""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path
from typing import Any

import msgspec

from ludo_cli.replay_cmd import UsageError, guarded, with_store

__all__ = ["register"]


def register(tournament: argparse.ArgumentParser) -> None:
    """`ludo tournament`'s parser (ludo_cli/main.py names the command)."""
    tournament.description = "Arena tournament files (docs/arenas.md). verify works offline."
    sub = tournament.add_subparsers(dest="tournament_command", metavar="SUBCOMMAND", required=True)

    export = sub.add_parser("export", help="write an arena's tournament file (once it is over)")
    export.add_argument("tournament_id", metavar="ID")
    export.add_argument("-o", "--output", type=Path, help="file to write (default: stdout)")
    export.set_defaults(func=guarded(_export, "ludo tournament"))

    verify = sub.add_parser("verify", help="verify a tournament file offline (exit 0: it holds)")
    verify.add_argument("file", type=Path, metavar="FILE", help="- reads stdin")
    verify.add_argument("--json", action="store_true", help="print the verdict as JSON")
    verify.set_defaults(func=guarded(_verify, "ludo tournament"))


def _verify(args: argparse.Namespace) -> int:
    from ludo_cli.progress import Progress
    from replays.tournament import TournamentFormatError, load_tournament
    from replays.tournament_verify import TournamentFailure, TournamentVerdict, verify_tournament

    path = args.file
    try:
        raw = sys.stdin.buffer.read() if str(path) == "-" else path.read_bytes()
        tournament = load_tournament(raw)
    except (OSError, TournamentFormatError) as error:
        # A failure like any other (exit 1, as `ludo replay verify` counts an unreadable
        # file), its check "file", so --json keeps one shape.
        reason = error.strerror if isinstance(error, OSError) else str(error)
        message = f"not a readable tournament file: {reason}"
        failure = TournamentFailure(check="file", where="", message=message)
        verdict = TournamentVerdict(
            ok=False, tournament_id="", events=0, matches=0, players=0, failure=failure
        )
    else:
        # A bar on stderr for files of many matches (each replay is verified in full).
        quiet = len(tournament.matches) <= 20
        with Progress(
            len(tournament.matches), "verify", stream=io.StringIO() if quiet else sys.stderr
        ) as bar:
            verdict = verify_tournament(tournament, on_match=bar.advance)
    if args.json:
        out = {"file": str(path), **msgspec.to_builtins(verdict)}
        print(msgspec.json.encode(out).decode())
    else:
        print(f"{'OK  ' if verdict.ok else 'FAIL'} {path}: {verdict.describe()}")
    return 0 if verdict.ok else 1


def _export(args: argparse.Namespace) -> int:
    from replays.tournament import dump_tournament
    from services.match.replays.tournament_export import (
        ArenaNotFound,
        ArenaRunning,
        tournament_from_store,
    )

    async def work(store: Any) -> int:
        try:
            tournament = await tournament_from_store(store, args.tournament_id)
        except ArenaNotFound as error:
            raise UsageError(f"{error}; an arena's id is in its page's address") from None
        except ArenaRunning as error:
            print(f"ludo tournament export: {error}", file=sys.stderr)
            return 1
        data = dump_tournament(tournament)
        if args.output is None:
            sys.stdout.buffer.write(data)
        else:
            args.output.write_bytes(data)
        print(
            f"wrote {args.output or 'stdout'}: {len(tournament.events)} arena events, "
            f"{len(tournament.matches)} matches; check it with `ludo tournament verify`",
            file=sys.stderr,
        )
        return 0

    return int(with_store(work))
