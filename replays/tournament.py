"""The tournament file: one arena, its stream and every match it paired, verifiable offline.

A tournament file is one JSON object (docs/arenas.md, "The export file and offline
verification"):

    {"format": "ludo-tournament", "format_version": 1, "tournament_id", "stream_id",
     "exported_at", "exported_by",
     "standings": [{"rank", "player_id", "name", "score", "matches"}],   <- a summary
     "events": [<as in a replay file>, ...],                           <- the arena's stream
     "matches": [<a replay file, docs/replays.md>, ...]}               <- in pairing order

The arena's events are stored exactly as a match's are (`ReplayEvent`: the bytes hashed,
kept as a string, and the chain hashes), and each match is a whole replay file
(`replays.format`), so `ludo replay verify` checks a match taken out of the file. The
standings repeat what the events say; `replays.tournament_verify` checks that they do.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final, Literal

import msgspec

from domain.arena import (
    ArenaEvent,
    ArenaTable,
    TablesPaired,
    decode_arena_event,
    fold,
    standings,
)
from domain.chain import GENESIS, event_hash
from domain.streams import tournament_stream
from replays.format import FILE as REPLAY_FILE
from replays.format import ReplayEvent, ReplayFile, dump_replay
from replays.versioned_file import VersionedFile

__all__ = [
    "FILE",
    "FORMAT",
    "FORMAT_VERSION",
    "TournamentFile",
    "TournamentFormatError",
    "TournamentStanding",
    "arena_events",
    "build_tournament",
    "dump_tournament",
    "load_tournament",
    "paired_tables",
    "standing_lines",
    "tournament_from_events",
]

FORMAT: Final = "ludo-tournament"
# Raise on any change a version-1 reader would misread; keep reading every older version.
FORMAT_VERSION: Final = 1
SUPPORTED_VERSIONS: Final = frozenset({1})


class TournamentFormatError(ValueError):
    """The file is not a tournament this code can read; the message names the field."""


class TournamentStanding(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A line of the header's standings (a summary of `domain.arena.standings`)."""

    rank: int
    player_id: str
    name: str
    score: float
    matches: int


class TournamentFile(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """A whole arena as a file (layout in the module docstring). `events` and `matches`
    stay last: `dump_tournament` writes them one per line after the header."""

    format: Literal["ludo-tournament"] = FORMAT
    format_version: int = FORMAT_VERSION
    tournament_id: str
    stream_id: str
    exported_at: str | None = None
    exported_by: str | None = None
    standings: list[TournamentStanding]
    events: list[ReplayEvent]
    matches: list[ReplayFile]


def arena_events(events: Iterable[ReplayEvent]) -> list[ArenaEvent]:
    """The arena's events decoded from their stored bytes, each upcast from the schema
    version it was stored at (msgspec's errors and the upcasters' `ValueError`
    propagate)."""
    return [
        decode_arena_event(
            e.data.encode("utf-8"), type_name=e.type, schema_version=e.schema_version
        )
        for e in events
    ]


def paired_tables(events: Iterable[ArenaEvent]) -> list[ArenaTable]:
    """Every table the arena paired, in pairing order."""
    return [table for e in events if isinstance(e, TablesPaired) for table in e.tables]


def standing_lines(events: Sequence[ArenaEvent]) -> list[TournamentStanding]:
    """The header's standings: the fold's (`domain.arena.standings`), summarised."""
    return [
        TournamentStanding(s.rank, s.player_id, s.name, s.score, s.matches)
        for s in standings(fold(events))
    ]


def build_tournament(
    tournament_id: str,
    events: Sequence[ReplayEvent],
    matches: Iterable[ReplayFile],
    *,
    exported_at: str | None = None,
    exported_by: str | None = None,
) -> TournamentFile:
    """A tournament file of the arena's stored events and its matches' replays, with the
    standings summarised from the events and the matches put in pairing order (a replay
    of a match the arena never paired goes last: the verifier names it)."""
    decoded = arena_events(events)
    order = {table.match_id: i for i, table in enumerate(paired_tables(decoded))}
    return TournamentFile(
        tournament_id=tournament_id,
        stream_id=tournament_stream(tournament_id),
        exported_at=exported_at,
        exported_by=exported_by,
        standings=standing_lines(decoded),
        events=list(events),
        matches=sorted(matches, key=lambda m: order.get(m.match_id, len(order))),
    )


def tournament_from_events(
    tournament_id: str, events: Iterable[ArenaEvent], matches: Iterable[ReplayFile]
) -> TournamentFile:
    """A tournament file of arena events that never saw a database (tests, golden files):
    hashes computed here exactly as the event store computes them on append (an arena
    event's stored bytes are its msgspec JSON, `EventData.of`)."""
    stream = tournament_stream(tournament_id)
    prev = GENESIS
    stored: list[ReplayEvent] = []
    for version, event in enumerate(events):
        data = msgspec.json.encode(event)
        kind = type(event)
        digest = event_hash(prev, stream, version, kind.__name__, kind.schema_version, data)
        stored.append(
            ReplayEvent(
                version=version,
                type=kind.__name__,
                schema_version=kind.schema_version,
                data=data.decode("utf-8"),
                prev_hash=prev.hex(),
                hash=digest.hex(),
            )
        )
        prev = digest
    return build_tournament(tournament_id, stored, matches)


FILE: Final = VersionedFile(
    TournamentFile,
    name=FORMAT,
    versions=SUPPORTED_VERSIONS,
    error=TournamentFormatError,
    noun="a tournament file",
    hints={"ludo-replay": " (a match's replay: `ludo replay verify` reads it)"},
)

_encoder = msgspec.json.Encoder()


def dump_tournament(tournament: TournamentFile) -> bytes:
    """The file's bytes: the header, then one arena event per line, then each match as
    `dump_replay` writes it (one event per line), so diffs and greps stay readable."""
    return FILE.dump(
        tournament,
        [
            ("events", [_encoder.encode(e) for e in tournament.events]),
            ("matches", [dump_replay(m).rstrip(b"\n") for m in tournament.matches]),
        ],
    )


def load_tournament(raw: bytes) -> TournamentFile:
    """Parse a tournament file; `TournamentFormatError` naming the field when it is not
    one (msgspec's message gives the path, e.g. `$.matches[2].events[7].hash`)."""
    tournament = FILE.load(raw)
    for i, match in enumerate(tournament.matches):
        FILE.check_version(
            match.format_version,
            field=f"matches[{i}].format_version",
            versions=REPLAY_FILE.versions,
        )
    return tournament
