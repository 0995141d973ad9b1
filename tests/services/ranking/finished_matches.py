"""Finished matches written straight into the event store, for the ranking tests (and the
tests of what reads ratings: the match service's proxy, schemathesis)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from domain import events as ev
from domain.party import MatchOpened
from services.shared.eventstore import EventStore

CPU = None  # a CPU seat in `write_match`


async def write_match(
    engine: AsyncEngine,
    store: EventStore,
    seats: Sequence[str | None],
    placements: Sequence[int],
    *,
    ranked: bool = True,
    stood_in: dict[int, str] | None = None,
    reclaimed: Sequence[int] = (),
    party_event: bool = True,
    table_ranked: bool | None = None,
    names: dict[str, str] | None = None,
) -> str:
    """A finished match: `seats` are player ids (None: a CPU), seated under their id or
    under `names[id]`. Returns the stream id.

    The `matches` row and (with `party_event`) the party's `MatchOpened` go in with
    `MatchCreated`, as the match service writes them."""
    match_id = str(uuid.uuid4())
    party_id = str(uuid.uuid4())
    stream = f"match-{match_id}"
    specs = tuple(
        ev.SeatSpec(
            name=(names or {}).get(p, p) if p else f"cpu-{i}",
            player_id=p,
            cpu=None if p else "easy",
        )
        for i, p in enumerate(seats)
    )
    events: list[ev.Event] = [
        ev.MatchCreated(ruleset={}, seats=specs, seed_hash="0" * 64),
        ev.MatchStarted(client_seeds=("",) * len(seats), client_seed=""),
    ]
    for seat, reason in (stood_in or {}).items():
        events.append(ev.SeatStoodIn(seat=seat, reason=reason))  # type: ignore[arg-type]
    events += [ev.SeatReclaimed(seat=seat) for seat in reclaimed]
    events += [ev.MatchFinished(placements=tuple(placements)), ev.SeedRevealed(server_seed="00")]
    async with engine.begin() as conn:
        await conn.execute(
            text(
                "INSERT INTO matches (stream_id, party_id, turn_limit, ranked) "
                "VALUES (:s, :p, NULL, :r)"
            ),
            {"s": stream, "p": party_id, "r": ranked if table_ranked is None else table_ranked},
        )
        if party_event:
            opened = MatchOpened(
                match_id=match_id, first_seat=0, game=1, ranked=ranked, turn_limit=None
            )
            await store.append(f"party-{party_id}", 0, [opened], conn=conn)
        await store.append(stream, 0, events[:2], conn=conn)
    await store.append(stream, 2, events[2:])
    return stream
