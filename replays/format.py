"""The replay file: one match, self-contained, verifiable without the database.

A replay file is one JSON object (docs/replays.md has the full description):

    {"format": "ludo-replay", "format_version": 1,
     "match_id", "stream_id", "exported_at", "exported_by",
     "ruleset", "seats", "first_seat", "seed_hash", "client_seeds", "client_seed",
     "server_seed", "placements",                 <- the header: a readable summary
     "events": [{"version", "type", "schema_version", "data", "recorded_at", "actor",
                 "prev_hash", "hash"}, ...]}      <- the stream, exactly as stored

`data` is the event's JSON *text* exactly as stored and hashed, kept as a string so no JSON
tool can reorder or re-space the bytes the hash chain covers. The header repeats what the
events say (the verifier checks that it agrees with them); only the events are evidence.
`server_seed` and `placements` are null until the match has ended. The header's `ruleset` is
the MatchCreated's as stored, not as upcast (`stored_ruleset`): a match recorded before rules
revisions existed has none there, and was played under revision 1.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Final, Literal

import msgspec

from domain.chain import GENESIS, ChainLink, event_hash
from domain.events import (
    Event,
    MatchCreated,
    MatchFinished,
    MatchStarted,
    SeatSpec,
    SeedRevealed,
    decode_event,
    encode_event,
)
from domain.streams import match_stream
from replays.versioned_file import VersionedFile

__all__ = [
    "FILE",
    "FORMAT",
    "FORMAT_VERSION",
    "ReplayEvent",
    "ReplayFile",
    "ReplayFormatError",
    "build_replay",
    "dump_replay",
    "load_replay",
    "replay_from_events",
    "stored_ruleset",
]

FORMAT: Final = "ludo-replay"
# Raise on any change a version-1 reader would misread; keep reading every older version.
FORMAT_VERSION: Final = 1
SUPPORTED_VERSIONS: Final = frozenset({1})


class ReplayFormatError(ValueError):
    """The file is not a replay this code can read; the message names the field."""


class ReplayEvent(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, gc=False):
    """One stored event: its place in the stream, its exact bytes and its chain hashes.

    `gc=False`: its fields are strings and ints, so it can be in no reference cycle and
    the garbage collector need not track the thousand of them a file holds (parsing a
    file costs 5% fewer instructions)."""

    version: int
    type: str
    schema_version: int
    data: str
    prev_hash: str
    hash: str
    recorded_at: str | None = None
    actor: str | None = None

    def link(self, stream_id: str) -> ChainLink:
        """The event as `domain.chain.first_break` takes it (hashes in hex, as in the file)."""
        return (
            stream_id,
            self.version,
            self.type,
            self.schema_version,
            self.data.encode("utf-8"),
            self.prev_hash,
            self.hash,
        )

    def event(self) -> Event:
        """The decoded event, upcast to the current schema version."""
        return decode_event(
            self.data.encode("utf-8"), type_name=self.type, schema_version=self.schema_version
        )


class ReplayFile(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """A whole match as a file (layout in the module docstring). `events` stays last:
    `dump_replay` writes one event per line after the header."""

    format: Literal["ludo-replay"] = FORMAT
    format_version: int = FORMAT_VERSION
    match_id: str
    stream_id: str
    exported_at: str | None = None
    exported_by: str | None = None
    ruleset: dict[str, Any]
    seats: tuple[SeatSpec, ...]
    first_seat: int
    seed_hash: str
    client_seeds: tuple[str, ...] | None
    client_seed: str | None
    server_seed: str | None
    placements: tuple[int, ...] | None
    events: list[ReplayEvent]


_encoder = msgspec.json.Encoder()

FILE: Final = VersionedFile(
    ReplayFile,
    name=FORMAT,
    versions=SUPPORTED_VERSIONS,
    error=ReplayFormatError,
    noun="a replay file",
)


def dump_replay(replay: ReplayFile) -> bytes:
    """The file's bytes: JSON with one event per line, so diffs and greps stay readable."""
    return FILE.dump(replay, [("events", [_encoder.encode(e) for e in replay.events])])


def load_replay(raw: bytes) -> ReplayFile:
    """Parse a replay file; `ReplayFormatError` naming the field when it is not one."""
    return FILE.load(raw)


def build_replay(
    match_id: str,
    stream_id: str,
    events: Sequence[ReplayEvent],
    *,
    exported_at: str | None = None,
    exported_by: str | None = None,
) -> ReplayFile:
    """A replay file of stored events, with the header summarised from them."""
    created: MatchCreated | None = None
    started: MatchStarted | None = None
    finished: MatchFinished | None = None
    revealed: SeedRevealed | None = None
    ruleset: dict[str, Any] = {}
    for stored in events:
        if stored.type not in _HEADER_TYPES:
            continue
        event = stored.event()
        if isinstance(event, MatchCreated):
            created = event
            ruleset = stored_ruleset(stored.data.encode("utf-8"))
        elif isinstance(event, MatchStarted):
            started = event
        elif isinstance(event, MatchFinished):
            finished = event
        elif isinstance(event, SeedRevealed):
            revealed = event
    if created is None:
        raise ReplayFormatError(f"stream {stream_id!r} has no MatchCreated event")
    return ReplayFile(
        match_id=match_id,
        stream_id=stream_id,
        ruleset=ruleset,
        seats=created.seats,
        first_seat=created.first_seat,
        seed_hash=created.seed_hash,
        client_seeds=started.client_seeds if started else None,
        client_seed=started.client_seed if started else None,
        server_seed=revealed.server_seed if revealed else None,
        placements=finished.placements if finished else None,
        events=list(events),
        exported_at=exported_at,
        exported_by=exported_by,
    )


def stored_ruleset(data: bytes) -> dict[str, Any]:
    """The ruleset in a MatchCreated's stored bytes, as stored: upcasting the event adds the
    revision a version-1 event leaves out, and a file's header must not change with the
    code that exports it. The bytes must hold a MatchCreated (one decoded already)."""
    ruleset: dict[str, Any] = msgspec.json.decode(data)["ruleset"]
    return ruleset


_HEADER_TYPES = frozenset({"MatchCreated", "MatchStarted", "MatchFinished", "SeedRevealed"})


def replay_from_events(
    match_id: str,
    events: Iterable[Event],
    *,
    stream_id: str | None = None,
    actors: Sequence[str | None] | None = None,
) -> ReplayFile:
    """A replay of events that never saw a database (tests, self-play): hashes computed
    here exactly as the event store computes them on append."""
    stream = stream_id or match_stream(match_id)
    prev = GENESIS
    out: list[ReplayEvent] = []
    for version, event in enumerate(events):
        data = encode_event(event)
        kind = type(event)
        digest = event_hash(prev, stream, version, kind.__name__, kind.schema_version, data)
        out.append(
            ReplayEvent(
                version=version,
                type=kind.__name__,
                schema_version=kind.schema_version,
                data=data.decode("utf-8"),
                prev_hash=prev.hex(),
                hash=digest.hex(),
                actor=actors[version] if actors is not None else None,
            )
        )
        prev = digest
    return build_replay(match_id, stream, out)
