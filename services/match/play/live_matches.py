"""The matches being played now, to watch (`GET /api/matches/live`, the lobby's "live
matches" list and its socket's `matches` frame): who plays, ranked or not, and how far
along each is.

Read from the `parties` read model (a party whose match runs is `playing`; its settings
hold the seats and the match id; the index `parties (status, updated_at DESC)` finds the
newest) and the `matches` rows (when each began: `match_rows.read_began`), leaving out
the tables of private arenas (reached only by their link); then each match's
`MatchFinished`, read for them all at once (a party stays `playing` after its match ended,
until もう一度), and the fold of each match still running (`MatchReads.state`: cached,
so a re-read folds only the events since).
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

import msgspec
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.errors import NotFound
from domain.streams import match_stream
from services.match.play.reads import MatchReads
from services.match.play.schemas import LiveMatchOut, LiveSeatOut
from services.shared.eventstore import EventLog
from services.shared.match_rows import read_began

__all__ = ["LIVE_MAX", "LIVE_READ", "live_matches"]

LIVE_MAX: Final = 20  # the running matches listed, newest first
# The playing parties read to find them: a party whose match ended stays `playing` (until
# もう一度 or forever), so more are read than listed.
LIVE_READ: Final = 60

_PLAYING: Final = sa.text(
    """
    SELECT p.settings
      FROM parties p
      LEFT JOIN arenas a ON a.arena_id = p.settings ->> 'arena_id'
     WHERE p.status = 'playing' AND a.private IS NOT TRUE
     ORDER BY p.updated_at DESC
     LIMIT :limit
    """
)


class _Party(msgspec.Struct):
    """The fields of a party's stored view (`parties.settings`) the list needs."""

    id: str
    match_id: str | None = None
    ranked: bool = False
    turn_limit: int | None = None
    arena_id: str | None = None


async def live_matches(
    engine: AsyncEngine, store: EventLog, reads: MatchReads, *, limit: int = LIVE_MAX
) -> list[LiveMatchOut]:
    """The matches being played now, the newest first (at most `limit`)."""
    async with engine.connect() as conn:
        rows = (await conn.execute(_PLAYING, {"limit": LIVE_READ})).all()
        parties = [msgspec.convert(row.settings, _Party) for row in rows]
        began_at = await read_began(
            conn, [match_stream(p.match_id) for p in parties if p.match_id is not None]
        )
    found: list[tuple[_Party, datetime]] = [
        (p, began_at[match_stream(p.match_id)])
        for p in parties
        if p.match_id is not None and match_stream(p.match_id) in began_at
    ]
    streams = [match_stream(p.match_id) for p, _ in found if p.match_id]
    ended = set(await store.read_streams(streams, types=["MatchFinished"])) if streams else set()
    out: list[LiveMatchOut] = []
    for party, began in found:
        assert party.match_id is not None
        if match_stream(party.match_id) in ended:
            continue
        try:
            state = await reads.state(party.match_id)
        except NotFound:  # its first events not readable here yet: listed next time
            continue
        board = state.board
        if state.status != "playing" or board is None:
            continue
        seats = [
            LiveSeatOut(
                seat=i,
                name=spec.name,
                colour=board.colours[i],
                player_id=spec.player_id,
                cpu=spec.cpu,
                stood_in=state.stood_in[i],
                goal=sum(1 for p in state.pieces[i] if p >= board.goal),
                progress=round(
                    sum(max(p, 0) for p in state.pieces[i]) / (len(state.pieces[i]) * board.goal),
                    3,
                ),
            )
            for i, spec in enumerate(state.seats)
        ]
        out.append(
            LiveMatchOut(
                match_id=party.match_id,
                party_id=party.id,
                ranked=party.ranked,
                turn_limit=party.turn_limit,
                arena_id=party.arena_id,
                started_at=began.isoformat(timespec="seconds"),
                turn=state.turn,
                seats=seats,
                href=f"/match/{party.match_id}",
            )
        )
        if len(out) == limit:
            break
    return out
