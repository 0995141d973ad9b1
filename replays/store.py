"""Replays and audits against the event store: export, import, audit (the I/O side).

Pure work (the file format, verification, the walk) lives in the sibling modules; this one
only reads and writes PostgreSQL through `services.shared.eventstore.EventStore`.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime
from importlib import metadata as package_metadata
from itertools import groupby

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from replays.format import ReplayEvent, ReplayFile, build_replay
from replays.verify import Verdict, verify_links, verify_replay
from services.shared.eventstore import ConcurrencyError, EventData, EventStore, StoredEvent

__all__ = [
    "ImportRefused",
    "ReplayNotFound",
    "actor_of",
    "audit_all",
    "audit_match",
    "export_match",
    "import_replay",
    "match_ids",
    "stream_of",
]


class ReplayNotFound(LookupError):
    """No match has that id (no events under its stream)."""


class ImportRefused(ValueError):
    """The file does not verify, or its match is already in this database."""


def stream_of(match_id: str) -> str:
    """The event stream of a match id (a UUID; anything else is not a match)."""
    try:
        return f"match-{uuid.UUID(match_id)}"
    except ValueError:
        raise ReplayNotFound(f"{match_id!r} is not a match id (a UUID)") from None


def _exported_by() -> str:
    try:
        return f"ludo-backend {package_metadata.version('ludo-backend')}"
    except package_metadata.PackageNotFoundError:
        return "ludo-backend"


def actor_of(stored: StoredEvent) -> str | None:
    """Who sent the command that appended `stored` (its metadata's `actor`), if known."""
    actor = stored.metadata.get("actor") if isinstance(stored.metadata, dict) else None
    return actor if isinstance(actor, str) else None


def replay_event(stored: StoredEvent) -> ReplayEvent:
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


async def _stream(store: EventStore, match_id: str) -> tuple[str, list[StoredEvent]]:
    stream = stream_of(match_id)
    stored = await store.read_stream(stream)
    if not stored:
        raise ReplayNotFound(f"no match {match_id}")
    return stream, stored


async def export_match(store: EventStore, match_id: str) -> ReplayFile:
    """The replay file of a stored match (of a live one too: no seed, no placements yet)."""
    stream, stored = await _stream(store, match_id)
    return build_replay(
        stream.removeprefix("match-"),
        stream,
        [replay_event(e) for e in stored],
        exported_at=datetime.now(UTC).isoformat(timespec="seconds"),
        exported_by=_exported_by(),
    )


async def _kept_seed(engine: AsyncEngine, stream: str) -> bytes | None:
    async with engine.connect() as conn:
        seed = await conn.scalar(
            sa.text("SELECT server_seed FROM match_seeds WHERE stream_id = :s"), {"s": stream}
        )
    return None if seed is None else bytes(seed)


async def audit_match(store: EventStore, match_id: str) -> Verdict:
    """Verify a match as stored: the chain of its rows, its dice against the seed the
    database keeps (before the reveal too), every move, and its result if it is over."""
    stream, stored = await _stream(store, match_id)
    return verify_links(
        stream,
        [
            (e.stream_id, e.version, e.type, e.schema_version, e.data, e.prev_hash, e.hash)
            for e in stored
        ],
        kept_seed=await _kept_seed(store.engine, stream),
        require_finished=False,
    )


async def match_ids(engine: AsyncEngine) -> list[str]:
    """Every stored match's id, oldest first."""
    async with engine.connect() as conn:
        rows = await conn.execute(
            sa.text(
                "SELECT stream_id FROM events WHERE stream_version = 0"
                " AND stream_id LIKE 'match-%' ORDER BY global_position"
            )
        )
        return [row.stream_id.removeprefix("match-") for row in rows]


async def audit_all(store: EventStore) -> AsyncIterator[tuple[str, Verdict]]:
    """`audit_match` for every stored match, oldest first."""
    for match_id in await match_ids(store.engine):
        yield match_id, await audit_match(store, match_id)


async def import_replay(store: EventStore, replay: ReplayFile) -> int:
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
    async with store.engine.begin() as conn:
        for run in runs:
            try:
                result = await store.append(
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
            await conn.execute(
                sa.text(
                    "INSERT INTO match_seeds (stream_id, server_seed) VALUES (:s, :seed)"
                    " ON CONFLICT (stream_id) DO NOTHING"
                ),
                {"s": stream, "seed": bytes.fromhex(replay.server_seed)},
            )
    return len(replay.events)
