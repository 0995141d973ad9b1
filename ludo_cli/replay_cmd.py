"""`ludo replay`: export, import, show and verify replay files; audit stored matches.

- `ludo replay export MATCH_ID [-o FILE]` writes a match's replay file (stdout by default).
- `ludo replay import FILE` stores a replay that verifies, byte for byte.
- `ludo replay show FILE` prints a move-by-move account.
- `ludo replay verify FILE...` checks files offline; exit 0 only when every check of every
  file holds, else 1 and, per failing file, the first failing event and its check.
  `--live` checks the export of a match still in play up to its last event (no dice
  values: no seed yet) instead of failing it as not over.
- `ludo replay diff OLD NEW` compares two files of one match (an earlier export against
  today's): exit 0 when NEW holds OLD's events unchanged (and perhaps more), else 1 and
  the first event where they part.
- `ludo replay audit [MATCH_ID...|--all]` verifies matches as stored in PostgreSQL.

export, import and audit use `DATABASE_URL` (unset: the embedded PostgreSQL); show and
verify need no database.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

import msgspec

__all__ = ["UsageError", "guarded", "register", "with_store"]


def register(replay: argparse.ArgumentParser) -> None:
    """`ludo replay`'s parser (ludo_cli/main.py names the command)."""
    replay.description = "Replays and audit (docs/replays.md). show and verify work offline."
    sub = replay.add_subparsers(dest="replay_command", metavar="SUBCOMMAND", required=True)

    export = sub.add_parser("export", help="write a stored match's replay file")
    export.add_argument("match_id")
    export.add_argument("-o", "--output", type=Path, help="file to write (default: stdout)")
    export.set_defaults(func=guarded(_export))

    imp = sub.add_parser("import", help="store a replay file that verifies")
    imp.add_argument("file", type=Path)
    imp.set_defaults(func=guarded(_import))

    show = sub.add_parser("show", help="print a move-by-move account of a replay file")
    show.add_argument("file", type=Path)
    show.add_argument("--options", action="store_true", help="list the legal moves of each roll")
    show.set_defaults(func=guarded(_show))

    verify = sub.add_parser("verify", help="verify replay files offline (exit 0: all hold)")
    verify.add_argument("files", type=Path, nargs="+", metavar="FILE", help="- reads stdin")
    verify.add_argument("--json", action="store_true", help="one JSON verdict per line")
    verify.add_argument(
        "--live",
        action="store_true",
        help="the export of a match still in play: check it up to its last event (hash "
        "chain, every move, turn order, roll numbers; not the dice values, which need the "
        "seed revealed at the end)",
    )
    verify.set_defaults(func=guarded(_verify))

    analyse = sub.add_parser(
        "analyse",
        help="print a replay file's analysis: each seat's luck and errors (docs/analysis.md)",
        description="Prints the analysis as JSON, the same bytes the ranking service stores "
        "for the match (GET /api/ratings/analysis/{match_id}). The file must verify first.",
    )
    analyse.add_argument("file", type=Path, metavar="FILE", help="- reads stdin")
    analyse.add_argument("-o", "--output", type=Path, help="file to write (default: stdout)")
    analyse.set_defaults(func=guarded(_analyse))

    diff = sub.add_parser(
        "diff", help="compare two replay files of one match: where does NEW depart from OLD?"
    )
    diff.add_argument("old", type=Path, metavar="OLD")
    diff.add_argument("new", type=Path, metavar="NEW")
    diff.set_defaults(func=guarded(_diff))

    audit = sub.add_parser("audit", help="verify matches as stored in the database")
    audit.add_argument("match_ids", nargs="*", metavar="MATCH_ID")
    audit.add_argument("--all", action="store_true", help="every stored match")
    audit.add_argument("--json", action="store_true", help="one JSON verdict per line")
    audit.set_defaults(func=guarded(_audit))


# ------------------------------------------------------------------------------ offline


def _read(path: Path) -> Any:
    from replays.format import ReplayFormatError, load_replay

    try:
        raw = sys.stdin.buffer.read() if str(path) == "-" else path.read_bytes()
    except OSError as error:
        raise UsageError(f"cannot read {path}: {error.strerror}") from None
    try:
        return load_replay(raw)
    except ReplayFormatError as error:
        raise UsageError(f"{path} is not a replay file: {error}") from None


class UsageError(Exception):
    """A problem with the command line or a file: printed, exit status 2 (`guarded`).
    `ludo tournament` raises it too."""


def _verify(args: argparse.Namespace) -> int:
    from ludo_cli.progress import Progress
    from replays.format import ReplayFormatError, load_replay
    from replays.verify import Failure, Verdict, verify_replay

    failed = 0
    with Progress(len(args.files), "verify", stream=_quiet_unless(len(args.files) > 20)) as bar:
        for path in args.files:
            try:
                raw = sys.stdin.buffer.read() if str(path) == "-" else path.read_bytes()
                verdict = verify_replay(load_replay(raw), live=args.live)
            except (OSError, ReplayFormatError) as error:
                failed += 1
                reason = error.strerror if isinstance(error, OSError) else str(error)
                if args.json:
                    # The same shape as a verdict; its failure's check is "file".
                    unread = Verdict(
                        ok=False,
                        stream_id="",
                        events=0,
                        rolls=0,
                        moves=0,
                        finished=False,
                        placements=None,
                        failure=Failure(
                            check="file",
                            version=None,
                            event_type=None,
                            message=f"not a readable replay file: {reason}",
                        ),
                    )
                    out = {"file": str(path), **msgspec.to_builtins(unread)}
                    print(msgspec.json.encode(out).decode())
                else:
                    print(f"FAIL {path}: not a readable replay file: {reason}")
                bar.advance()
                continue
            failed += not verdict.ok
            if args.json:
                out = msgspec.to_builtins(verdict)
                print(msgspec.json.encode({"file": str(path), **out}).decode())
            elif verdict.ok and not verdict.finished:
                dice = (
                    "dice checked against the seed in the file"
                    if verdict.dice_checked
                    else "dice NOT checked: the seed is revealed only when the match ends"
                )
                print(
                    f"OK   {path}: live match, checked up to event {verdict.events - 1}: "
                    f"{verdict.events} events, {verdict.rolls} rolls, {verdict.moves} moves; "
                    f"hash chain, moves and turn order hold; {dice}"
                )
            elif verdict.ok:
                print(
                    f"OK   {path}: {verdict.events} events, {verdict.rolls} rolls, "
                    f"{verdict.moves} moves, placements {list(verdict.placements or [])}"
                )
            else:
                assert verdict.failure is not None
                hint = (
                    " (a live export: `ludo replay verify --live` checks it up to its last event)"
                    if verdict.failure.check == "finished" and not verdict.finished
                    else ""
                )
                print(f"FAIL {path}: {verdict.failure.describe()}{hint}")
            bar.advance()
    return 1 if failed else 0


def _quiet_unless(show: bool) -> Any:
    import io

    return sys.stderr if show else io.StringIO()


def _show(args: argparse.Namespace) -> int:
    from domain.board import board_for
    from domain.rules import parse_ruleset
    from replays.steps import describe, walk
    from replays.verify import verify_replay

    replay = _read(args.file)
    board = board_for(parse_ruleset(replay.ruleset), len(replay.seats))
    names = [s.name for s in replay.seats]
    colours = ", ".join(f"{c} = {n}" for c, n in zip(board.colours, names, strict=True))
    print(f"match {replay.match_id}: {len(replay.events)} events; {colours}")
    verdict = verify_replay(replay)
    print(
        "verified: every check holds"
        if verdict.ok
        else f"NOT VERIFIED: {verdict.failure.describe() if verdict.failure else '?'}"
    )
    try:
        events = [e.event() for e in replay.events]
    except ValueError as error:
        raise UsageError(f"{args.file}: an event does not decode: {error}") from None
    times = [e.recorded_at for e in replay.events]
    for step in walk(events, times=times):
        by = "" if step.by in ("auto", "system", "player") else f"  [{step.by}]"
        stamp = (step.recorded_at or "")[11:19]
        line = f"{step.version:>5} {stamp:>8}  {describe(step.event, board, names)}{by}"
        if args.options and step.options is not None and type(step.event).__name__ == "DieRolled":
            moves = "; ".join(f"piece {m.piece} {m.frm}→{m.to}" for m in step.options)
            line += f"\n{'':>16}options: {moves or 'none'}"
        print(line)
    return 0 if verdict.ok else 1


def _analyse(args: argparse.Namespace) -> int:
    from domain.analysis import analyse, encode
    from replays.verify import verify_replay

    replay = _read(args.file)
    verdict = verify_replay(replay)
    if not verdict.ok:
        why = verdict.failure.describe() if verdict.failure else "?"
        print(f"{args.file}: NOT VERIFIED, not analysed: {why}", file=sys.stderr)
        return 1
    print(f"analysing {len(replay.events)} events of match {replay.match_id}…", file=sys.stderr)
    body = encode(analyse([e.event() for e in replay.events]))
    # Exactly the stored bytes (no newline added, but for a terminal's prompt).
    if args.output is None:
        sys.stdout.buffer.write(body + (b"\n" if sys.stdout.isatty() else b""))
        sys.stdout.flush()
    else:
        args.output.write_bytes(body)
        print(f"wrote {args.output}", file=sys.stderr)
    return 0


def _diff(args: argparse.Namespace) -> int:
    old, new = _read(args.old), _read(args.new)
    if old.stream_id != new.stream_id:
        print(f"different matches: {old.stream_id} and {new.stream_id}")
        return 1
    for position, (before, after) in enumerate(zip(old.events, new.events, strict=False)):
        # Every stored field, not only the hash: a file edited without re-hashing keeps
        # the old hash next to new data, and the point of a diff is to find such edits.
        if before != after:
            fields = [
                f for f in before.__struct_fields__ if getattr(before, f) != getattr(after, f)
            ]
            print(f"the files part at event {position} ({', '.join(fields)} differ):")
            for path, event in ((args.old, before), (args.new, after)):
                print(f"  {path}: " + " ".join(f"{f}={getattr(event, f)}" for f in fields))
            return 1
    if len(new.events) < len(old.events):
        print(f"{args.new} lacks events {len(new.events)}-{len(old.events) - 1} of {args.old}")
        return 1
    extra = len(new.events) - len(old.events)
    print(
        f"{args.new} holds all {len(old.events)} events of {args.old} unchanged"
        + (f", and {extra} more" if extra else "")
    )
    return 0


# ---------------------------------------------------------------------------- database


def with_store(work: Any) -> int:
    """Run `await work(store)` on an `EventStore` of `DATABASE_URL` (unset: the embedded
    PostgreSQL, started and migrated as needed); its result is the exit status."""
    from services.shared.database import create_engine, database_url, prepare_schema
    from services.shared.eventstore import EventStore
    from services.shared.settings import Settings, SettingsError

    try:
        settings = Settings.from_env()
    except SettingsError as error:
        raise UsageError(str(error)) from None

    async def run(url: str) -> int:
        engine = create_engine(url, pool_size=2, max_overflow=2)
        try:
            return int(await work(EventStore(engine)))
        finally:
            await engine.dispose()

    with database_url(settings) as url:
        prepare_schema(url, app_role=settings.db_app_role)
        return asyncio.run(run(url))


def _export(args: argparse.Namespace) -> int:
    from replays.format import dump_replay
    from services.match.replays.service import ReplayNotFound, ReplayStore

    async def work(store: Any) -> int:
        try:
            replay = await ReplayStore(store).export(args.match_id)
        except ReplayNotFound as error:
            raise UsageError(f"{error}; list matches with `ludo replay audit --all`") from None
        data = dump_replay(replay)
        if args.output is None:
            sys.stdout.buffer.write(data)
        else:
            args.output.write_bytes(data)
            print(
                f"wrote {args.output}: {len(replay.events)} events"
                + ("" if replay.server_seed else " (match not over: no seed, not verifiable)"),
                file=sys.stderr,
            )
        return 0

    return with_store(work)


def _import(args: argparse.Namespace) -> int:
    from replays.verify import verify_replay
    from services.match.replays.service import ImportRefused, ReplayStore

    replay = _read(args.file)
    # Checked offline first: a file that cannot be imported needs no database (import_replay
    # checks again, for callers that come without this command).
    verdict = verify_replay(replay)
    if verdict.failure is not None:
        print(
            f"ludo replay import: the file does not verify: {verdict.failure.describe()}",
            file=sys.stderr,
        )
        return 1

    async def work(store: Any) -> int:
        try:
            count = await ReplayStore(store).import_replay(replay)
        except ImportRefused as error:
            print(f"ludo replay import: {error}", file=sys.stderr)
            return 1
        print(f"imported match {replay.match_id}: {count} events")
        return 0

    return with_store(work)


def _audit(args: argparse.Namespace) -> int:
    from ludo_cli.progress import Progress
    from services.match.replays.service import ReplayNotFound, ReplayStore

    if not args.all and not args.match_ids:
        raise UsageError("name matches to audit, or pass --all")

    async def work(store: Any) -> int:
        replays = ReplayStore(store)
        ids = await replays.match_ids() if args.all else args.match_ids
        failed = 0
        with Progress(len(ids), "audit", stream=_quiet_unless(len(ids) > 20)) as bar:
            for match_id in ids:
                try:
                    verdict = await replays.audit(match_id)
                except ReplayNotFound as error:
                    failed += 1
                    print(f"FAIL {match_id}: {error}")
                    bar.advance()
                    continue
                failed += not verdict.ok
                if args.json:
                    out = {"match_id": match_id, **msgspec.to_builtins(verdict)}
                    print(msgspec.json.encode(out).decode())
                elif verdict.ok:
                    state = "finished" if verdict.finished else "in play"
                    print(f"OK   {match_id}: {verdict.events} events, {state}")
                else:
                    assert verdict.failure is not None
                    print(f"FAIL {match_id}: {verdict.failure.describe()}")
                bar.advance()
        if args.all:
            print(f"{len(ids) - failed} of {len(ids)} matches verified", file=sys.stderr)
        return 1 if failed else 0

    return with_store(work)


def guarded(func: Any, command: str = "ludo replay") -> Any:
    """Run a subcommand; a `UsageError` prints one line, after `command`, and exits 2."""

    def run(args: argparse.Namespace) -> int:
        try:
            return int(func(args))
        except UsageError as error:
            print(f"{command}: {error}", file=sys.stderr)
            return 2

    return run
