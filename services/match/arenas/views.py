"""What the arena API and socket show (docs/arenas.md, "The contract"): the list's summary of
an arena, the arena's full view, and a guest's own state in it. Pure functions of the
arena's fold (`domain.arena`), the time and the players' completion rates."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Final

from domain import arena as ar
from services.match.arenas.schemas import (
    ArenaStandingOut,
    ArenaSummary,
    ArenaView,
    CancelledOut,
    MatchResultOut,
    PlayerRef,
    ResultOut,
    RunningOut,
    YouOut,
)
from services.shared.standing import Completion, completion_out

__all__ = ["MATCHES_SHOWN", "arena_view", "iso", "summary_of", "you_in"]


# Scored matches a view carries (the socket sends it on every change: an arena of 200
# players plays 400 matches and more); the export holds every one.
MATCHES_SHOWN: Final = 100


def iso(seconds: float) -> str:
    """A time (seconds since the epoch) as the API writes it: ISO 8601, UTC."""
    return dt.datetime.fromtimestamp(seconds, dt.UTC).isoformat()


def summary_of(state: ar.ArenaState, now: float) -> ArenaSummary:
    """The list's line of the arena at `now`."""
    created = state.created
    assert created is not None
    lines = ar.standings(state)
    return ArenaSummary(
        tournament_id=created.arena_id,
        name=created.name,
        seats=created.seats,
        rules=created.rules,
        turn_limit=created.turn_limit,
        minutes=created.minutes,
        starts_at=iso(created.starts_at),
        ends_at=iso(state.ends_at),
        status=state.status(now),
        players=len(lines),
        schedule=created.schedule,
        leader=first.name if (first := ar.leader(lines)) is not None else None,
        title=created.title,
    )


def you_in(view: ArenaView, player_id: str | None, creator_id: str | None) -> YouOut | None:
    """`player_id`'s own state in the arena, read from `view` itself (None without a
    caller): their line of its standings and their table among its running matches, so
    that `you` and the rest of a frame always tell one moment of the arena. `creator_id`:
    the arena's creator (`ArenaCreated.creator_id`)."""
    if player_id is None:
        return None
    creator = creator_id is not None and creator_id == player_id
    line = next((line for line in view.standings if line.player_id == player_id), None)
    if line is None:
        return YouOut(state="out", creator=creator)
    table = next(
        (t for t in view.running if any(p.player_id == player_id for p in t.players)), None
    )
    return YouOut(
        state=line.state,
        match_id=table.match_id if table else None,
        party_id=table.party_id if table else None,
        score=line.score,
        rank=line.rank,
        creator=creator,
    )


def arena_view(
    state: ar.ArenaState,
    now: float,
    completions: Mapping[str, Completion],
    ratings: Mapping[str, float],
    player_id: str | None = None,
) -> ArenaView:
    """The arena in full at `now`, for `player_id` (None: anyone); each player's current
    `ratings` (the fold keeps the one pairing used: at their join or continue)."""
    created = state.created
    assert created is not None
    names = {p: e.name for p, e in state.entrants.items()}
    folded = ar.standings(state)
    on_podium = {line.player_id for line in ar.podium(folded)}
    lines = [
        ArenaStandingOut(
            rank=line.rank,
            player_id=line.player_id,
            name=line.name,
            score=line.score,
            streak=line.streak,
            on_fire=line.on_fire,
            matches=line.matches,
            rating=round(ratings.get(line.player_id, line.rating)),
            completion=completion_out(completions.get(line.player_id)),
            state=line.state,
        )
        for line in folded
    ]
    status = state.status(now)
    cancelled = state.cancelled
    view = ArenaView(
        tournament_id=created.arena_id,
        name=created.name,
        seats=created.seats,
        rules=created.rules,
        turn_limit=created.turn_limit,
        minutes=created.minutes,
        private=created.private,
        schedule=created.schedule,
        starts_at=iso(created.starts_at),
        ends_at=iso(state.ends_at),
        now=iso(now),
        status=status,
        cancelled=CancelledOut(reason=cancelled.reason, by=cancelled.by) if cancelled else None,
        standings=lines,
        running=[
            RunningOut(
                match_id=t.match_id,
                party_id=t.party_id,
                players=[PlayerRef(player_id=p, name=names[p]) for p in t.players],
            )
            for t in state.running.values()
        ],
        matches=[
            MatchResultOut(
                match_id=scored.match_id,
                party_id=state.tables[scored.match_id].party_id,
                results=[
                    ResultOut(
                        player_id=r.player_id,
                        name=names[r.player_id],
                        place=r.place,
                        left=r.left,
                        points=r.points,
                        doubled=r.doubled,
                    )
                    for r in scored.results
                ],
            )
            for scored in list(reversed(state.results.values()))[:MATCHES_SHOWN]
        ],
        matches_total=len(state.results),
        podium=[line for line in lines if line.player_id in on_podium]
        if status == "finished"
        else [],
        title=created.title,
        version=state.version,
    )
    view.you = you_in(view, player_id, created.creator_id)
    return view
