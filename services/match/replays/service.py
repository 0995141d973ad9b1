"""Replays against the event store: export, import, audit, and what the replay pages read.

The I/O half of `replays/`: the pure work (the file format, verification, the walk, the
viewer's and the report's projections) lives there; `ReplayStore` only reads and writes
PostgreSQL, through `services.shared.eventstore.EventStore` (the events, the match
streams), `services.shared.match_rows` (the kept seeds) and the `seat_connections`
table. `ludo replay export|import|audit` and the match service's replay routes
(`replays/routes.py`, through the `replays` part) both use it.

Export, audit and the viewer's walk read from the standby when the service has one
(`reads`, services/shared/database.py `ReadRoute`), but only a match whose end is there:
a stream without its `SeedRevealed` (a live match, or a finished one whose end the
standby has not replayed yet) is read from the primary, so no read is ever a cut replay.
"""

from __future__ import annotations

import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from datetime import UTC, datetime
from importlib import metadata as package_metadata
from itertools import groupby
from typing import TypeVar

import sqlalchemy as sa

from domain.errors import Invalid, NotFound
from domain.streams import MATCH_PREFIX, match_id_of, match_stream
from replays.format import ReplayEvent, ReplayFile, build_replay
from replays.report import ConnectionLogEntry
from replays.steps import Walker
from replays.verify import Verdict, verify_links, verify_replay
from replays.viewer import WalkedMatch, walk_match, walk_more
from services.match.caches import remember
from services.shared import match_rows
from services.shared.database import ReadRoute, RoutedReads
from services.shared.eventstore import ConcurrencyError, EventData, EventStore, StoredEvent

__all__ = [
    "ImportRefused",
    "ReplayNotFound",
    "ReplayStore",
    "actor_of",
    "exporter",
    "replay_event",
    "stream_of",
]


class ReplayNotFound(NotFound):
    """No match has that id (no events under its stream); the message names the id."""


class ImportRefused(Invalid):
    """The file does not verify, or its match is already in this database."""


def stream_of(match_id: str) -> str:
    """The event stream of a match id (a UUID; anything else is not a match)."""
    try:
        return match_stream(str(uuid.UUID(match_id)))
    except ValueError:
        raise ReplayNotFound(f"{match_id!r} is not a match id (a UUID)") from None


def exporter() -> str:
    """What an export names as its `exported_by`: this package and its version."""
    try:
        return f"ludo-backend {package_metadata.version('ludo-backend')}"
    except package_metadata.PackageNotFoundError:
        return "ludo-backend"


def actor_of(stored: StoredEvent) -> str | None:
    """Who sent the command that appended `stored` (its metadata's `actor`), if known."""
    actor = stored.metadata.get("actor") if isinstance(stored.metadata, dict) else None
    return actor if isinstance(actor, str) else None


def replay_event(stored: StoredEvent) -> ReplayEvent:
    """A stored event as a file holds it: its exact bytes, hashes in hex, time and actor."""
    return ReplayEvent(
        version=stored.version,
        type=stored.type,
        schema_version=stored.schema_version,
        data=stored.data.decode("utf-8"),
        prev_hash=stored.prev_hash.hex(),
        hash=stored.hash.hex(),
        recorded_at=stored.recorded_at.isoformat(),
        actor=actor_of(stored),
    )


_T = TypeVar("_T")
_Also = Callable[[EventStore, str], Awaitable[_T]]


# Walked matches kept: ~1 MB each for a 2,000-event match.
_WALKED_CACHE = 32


class _Walk:
    """A match walked so far, the walker that walked it, and whether it has ended."""

    def __init__(self, walked: WalkedMatch, walker: Walker, ended: bool) -> None:
        self.walked = walked
        self.walker = walker
        self.ended = ended


def _has_ended(stored: Sequence[StoredEvent]) -> bool:
    # `SeedRevealed` is appended with `MatchFinished`, and nothing follows it.
    return bool(stored) and stored[-1].type == "SeedRevealed"


async def _nothing(_store: EventStore, _stream: str) -> None:
    return None


async def _kept_seed(store: EventStore, stream: str) -> bytes | None:
    async with store.engine.connect() as conn:
        return await match_rows.read_seed(conn, stream)


class ReplayStore:
    """Replays of the matches of one event store (`MatchParts.replays`, and the
    `ludo replay` commands): export, import, audit, the walk the viewer and the report
    show, and the seats' connections."""

    def __init__(self, store: EventStore, reads: RoutedReads[EventStore] | None = None) -> None:
        self.store = store
        self.engine = store.engine
        # The reads that may come from a standby: the store over each engine.
        self.reads = reads or ReadRoute(store.engine).parts(EventStore, primary=store)
        # Matches walked (`walked`): the viewer asks for a long match's steps a range at a
        # time.
        self._walked: OrderedDict[str, _Walk] = OrderedDict()

    async def _ended(self, match_id: str, also: _Also[_T]) -> tuple[str, list[StoredEvent], _T]:
        """The match's stream, and what `also` reads beside it on the same engine: from
        the standby if the match's end is there, else from the primary."""
        stream = stream_of(match_id)

        async def read(store: EventStore) -> tuple[list[StoredEvent], _T]:
            return await store.read_stream(stream), await also(store, stream)

        stored, extra = await self.reads(read, complete=lambda got: _has_ended(got[0]))
        if not stored:
            raise ReplayNotFound(f"no match {match_id}")
        return stream, stored, extra

    async def _stream(self, match_id: str) -> tuple[str, list[StoredEvent]]:
        stream, stored, _ = await self._ended(match_id, _nothing)
        return stream, stored

    async def export(self, match_id: str) -> ReplayFile:
        """The replay file of a stored match (of a live one too: no seed, no placements
        yet)."""
        stream, stored = await self._stream(match_id)
        return build_replay(
            match_id_of(stream),
            stream,
            [replay_event(e) for e in stored],
            exported_at=datetime.now(UTC).isoformat(timespec="seconds"),
            exported_by=exporter(),
        )

    async def audit(self, match_id: str) -> Verdict:
        """Verify a match as stored: the chain of its rows, its dice against the seed the
        database keeps (before the reveal too), every move, and its result if it is over."""
        stream, stored, kept_seed = await self._ended(match_id, _kept_seed)
        return verify_links(
            stream,
            [
                (e.stream_id, e.version, e.type, e.schema_version, e.data, e.prev_hash, e.hash)
                for e in stored
            ],
            kept_seed=kept_seed,
            require_finished=False,
        )

    async def match_ids(self) -> list[str]:
        """Every stored match's id, oldest first."""
        return [match_id_of(stream) for stream in await self.store.streams(MATCH_PREFIX)]

    async def audit_all(self) -> AsyncIterator[tuple[str, Verdict]]:
        """`audit` of every stored match, oldest first."""
        for match_id in await self.match_ids():
            yield match_id, await self.audit(match_id)

    async def import_replay(self, replay: ReplayFile) -> int:
        """Store a verified replay's events under its own stream, byte for byte, so the
        stored hashes are the file's. Refused when it does not verify or the match exists.

        Each run of events by one actor is one append (the store keeps one `actor` per
        append); all of them, and the seed, commit together or not at all. The original
        recording times go into each append's metadata (`recorded_at` is the import's).
        Imported matches have no `matches` row, so the ranking service never rates them.
        """
        verdict = verify_replay(replay)
        if not verdict.ok:
            assert verdict.failure is not None
            raise ImportRefused(f"the file does not verify: {verdict.failure.describe()}")
        stream = replay.stream_id
        if stream != stream_of(replay.match_id):
            raise ImportRefused(f"stream {stream!r} is not match {replay.match_id}'s stream")
        runs: list[Sequence[ReplayEvent]] = [
            list(run) for _actor, run in groupby(replay.events, key=lambda e: e.actor)
        ]
        async with self.engine.begin() as conn:
            for run in runs:
                try:
                    result = await self.store.append(
                        stream,
                        run[0].version,
                        [EventData(e.type, e.schema_version, e.data.encode("utf-8")) for e in run],
                        metadata={
                            "actor": run[0].actor,
                            "imported": True,
                            "recorded_at": [e.recorded_at for e in run],
                        },
                        conn=conn,
                    )
                except ConcurrencyError:
                    raise ImportRefused(f"match {replay.match_id} is already stored here") from None
                for stored, original in zip(result.events, run, strict=True):
                    if stored.hash.hex() != original.hash:  # pragma: no cover - same function
                        raise ImportRefused(f"event {original.version} hashed differently here")
            if replay.server_seed is not None:
                await match_rows.insert_seed(conn, stream, bytes.fromhex(replay.server_seed))
        return len(replay.events)

    async def walked(self, match_id: str) -> WalkedMatch:
        """The stored match walked (`replays.viewer.walk_match`), for the viewer and the
        report; ReplayNotFound when there is no such match. Walked once and kept (the
        last `_WALKED_CACHE` matches): an ended match never changes, and one still being
        played is walked on over the events stored since (the viewer reads a long match a
        range at a time, so the walk must not be made again for each range)."""
        key = stream_of(match_id)
        kept = self._walked.get(key)
        if kept is None:
            _, stored = await self._stream(match_id)
            walker = Walker()
            walked = walk_match(
                match_id,
                [e.event for e in stored],
                actors=[actor_of(e) for e in stored],
                recorded_at=[e.recorded_at for e in stored],
                walker=walker,
            )
            remember(self._walked, key, _Walk(walked, walker, _has_ended(stored)), _WALKED_CACHE)
            return walked
        self._walked.move_to_end(key)
        if not kept.ended:
            newer = await self.store.read_stream(key, len(kept.walked.steps))
            # Another request may have walked some of them meanwhile: the rest only.
            newer = [e for e in newer if e.version >= len(kept.walked.steps)]
            walk_more(
                kept.walked,
                kept.walker,
                [e.event for e in newer],
                actors=[actor_of(e) for e in newer],
                recorded_at=[e.recorded_at for e in newer],
            )
            kept.ended = _has_ended(newer) or kept.ended
        return kept.walked

    async def connection_log(self, match_id: str) -> list[ConnectionLogEntry]:
        """The seats' live connections of a match, in time order (`seat_connections`,
        kept by the match service)."""
        async with self.engine.connect() as conn:
            rows = await conn.execute(
                sa.text(
                    "SELECT seat, kind, at FROM seat_connections WHERE stream_id = :s"
                    " ORDER BY at, id"
                ),
                {"s": stream_of(match_id)},
            )
            return [ConnectionLogEntry(r.seat, r.kind, r.at) for r in rows]
