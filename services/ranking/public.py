"""The public rating reads (`/api/ratings/*`, no token): what players see.

Every rating here is `Model.player_rating` (a rating on mu: a win never lowers it, a loss
or an abandonment never raises it; services/ranking/ratings.py), rounded to the nearest
integer; `delta` is the difference of the two rounded numbers. The operator's ordinal stays
under `/api/ranking/*`. The rows come from the ranking service's queries
(`RankingService.queries`, services/ranking/queries.py: the leaderboard is the operator's
one query, in the players' order), on the standby when the service has one
(`RankingService.lagging`: they may be seconds old; docs/scaling.md, Reads from a
standby); this module only shows them. The match service
proxies these routes for its pages (services/match/ratings/routes.py).
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated

import msgspec
from litestar import Controller, get
from litestar.params import FromPath, QueryParameter

from domain.errors import Invalid, NotFound
from domain.streams import match_stream
from services.ranking.queries import ChangeOut, RatingOut, RatingQueries
from services.ranking.ratings import DEFAULT_MODEL, MODELS, Skill, model_named
from services.ranking.service import Ranking
from services.shared.errors import error_responses
from services.shared.standing import (
    Completion,
    CompletionOut,
    Reputations,
    completion_out,
    reputations,
)

__all__ = ["PublicRatingsController"]

MAX_OFFSET = 1_000_000_000

# A player's rating in one model, their history and completion, read on one engine.
_PlayerRows = tuple[RatingOut, list[ChangeOut], Completion | None]


class BoardEntry(msgspec.Struct, kw_only=True):
    rank: int
    player_id: str
    name: str | None
    rating: int
    provisional: bool
    matches: int


class PublicLeaderboard(msgspec.Struct, kw_only=True):
    model: str
    entries: list[BoardEntry]


class HistoryEntry(msgspec.Struct, kw_only=True):
    """One rated match of the player: `place` of `players` (the match's seats, CPUs
    included); a player who left is placed after every seat that stayed."""

    match_id: str
    at: datetime
    place: int
    players: int
    left_match: bool
    rating_before: int
    rating_after: int
    delta: int


class PublicPlayer(msgspec.Struct, kw_only=True):
    player_id: str
    name: str | None
    model: str
    rating: int
    provisional: bool
    matches: int
    history: list[HistoryEntry]
    completion: CompletionOut | None = None


class MatchChange(msgspec.Struct, kw_only=True):
    player_id: str
    name: str | None
    place: int
    rating_before: int
    rating_after: int
    delta: int
    provisional: bool


class PublicMatch(msgspec.Struct, kw_only=True):
    match_id: str
    model: str
    rated: bool
    changes: list[MatchChange]


ModelParam = Annotated[
    str, QueryParameter(description=f"rating model: {', '.join(MODELS)} (default openskill)")
]


class PublicRatingsController(Controller):
    path = "/api/ratings"
    tags = ("ratings",)

    @get(
        "/leaderboard",
        operation_id="getPublicLeaderboard",
        summary="Players by player rating (established first, then provisional)",
        description="`rating` is the player rating (on mu), rounded. Established players come "
        "first, then provisional ones (few matches: the rating is still uncertain), each "
        "group by rating.",
    )
    async def leaderboard(
        self,
        ranking: Ranking,
        model: ModelParam = DEFAULT_MODEL,
        limit: Annotated[int, QueryParameter(ge=1, le=500)] = 100,
        offset: Annotated[int, QueryParameter(ge=0, le=MAX_OFFSET)] = 0,
    ) -> PublicLeaderboard:
        m = model_named(model)
        rows = await ranking.lagging(
            lambda q: q.leaderboard(model, by="player", limit=limit, offset=offset)
        )
        return PublicLeaderboard(
            model=model,
            entries=[
                BoardEntry(
                    rank=offset + i + 1,
                    player_id=r.player_id,
                    name=r.name,
                    rating=m.shown_rating(r.mu),
                    provisional=r.provisional,
                    matches=r.matches,
                )
                for i, r in enumerate(rows)
            ],
        )

    @get(
        "/players/{player_id:str}",
        operation_id="getPublicPlayerRating",
        summary="A player's rating and their newest rated matches (newest first)",
        responses=error_responses("not_found"),
    )
    async def player(
        self,
        ranking: Ranking,
        player_id: FromPath[str],
        model: ModelParam = DEFAULT_MODEL,
        limit: Annotated[
            int, QueryParameter(ge=1, le=500, description="the newest N rated matches")
        ] = 50,
    ) -> PublicPlayer:
        m = model_named(model)
        if "\x00" in player_id or len(player_id) > 200:  # no such player id can exist
            raise NotFound("no rating for this player")

        async def read(q: RatingQueries) -> _PlayerRows | None:
            row = next((r for r in await q.ratings(player_id) if r.model == model), None)
            if row is None:
                return None
            history = await q.history(player_id, model, limit)
            return row, history, (await q.completions([player_id])).get(player_id)

        # A player rated a moment ago may not be on the standby yet: ask the primary.
        found = await ranking.lagging(read, complete=lambda got: got is not None)
        if found is None:
            raise NotFound("no rating for this player")
        row, history, completion = found
        entries = []
        for h in history:
            before, after = m.shown_rating(h.mu_before), m.shown_rating(h.mu_after)
            entries.append(
                HistoryEntry(
                    match_id=h.match_id,
                    at=h.finished_at,
                    place=h.place,
                    players=h.players,
                    left_match=h.left_match,
                    rating_before=before,
                    rating_after=after,
                    delta=after - before,
                )
            )
        return PublicPlayer(
            player_id=player_id,
            name=row.name,
            model=model,
            rating=m.shown_rating(row.mu),
            provisional=row.provisional,
            matches=row.matches,
            history=entries,
            completion=completion_out(completion),
        )

    @get(
        "/reputation",
        operation_id="getPublicReputations",
        summary="Completion rates and ratings of many players at once (the lobby, the table)",
        description="`ids`: up to 100 player ids, comma-separated. Each comes back once, in "
        "the order asked, with `completion` null when the player has no ended match (casual "
        "and ranked count; the last 50), and `rating`, the player rating rounded (1500 "
        "before any rated match).",
    )
    async def reputation(
        self,
        ranking: Ranking,
        ids: Annotated[
            str, QueryParameter(min_length=1, max_length=4_000, description="player ids, a,b,c")
        ],
    ) -> Reputations:
        return await ranking.reads.read(lambda engine: reputations(engine, ids))

    @get(
        "/matches/{match_id:str}",
        operation_id="getPublicMatchRatings",
        summary="The rating changes of one match",
        description="`rated` is false (and `changes` empty) for a match with no rating rows: "
        "casual, unfinished, or not reached by the ranking consumer yet. `provisional` is the "
        "player's state after this match.",
        responses=error_responses("invalid", "not_found"),
    )
    async def match(
        self, ranking: Ranking, match_id: FromPath[str], model: ModelParam = DEFAULT_MODEL
    ) -> PublicMatch:
        m = model_named(model)
        try:
            bare = str(uuid.UUID(match_id))
        except ValueError:
            raise Invalid("match_id: not a UUID", field="match_id") from None
        stream = match_stream(bare)
        # A rated match's changes never change; one not rated on the standby may be
        # rated on the primary already (the table page polls for it): ask it.
        rows = await ranking.lagging(lambda q: q.match_changes(model, stream), complete=bool)
        if not rows and not await ranking.queries.match_exists(stream):
            raise NotFound("no such match")
        changes = []
        for r in rows:
            before, after = m.shown_rating(r.mu_before), m.shown_rating(r.mu_after)
            skill = Skill(mu=r.mu_after, sigma=r.sigma_after, matches=int(r.matches))
            changes.append(
                MatchChange(
                    player_id=r.player_id,
                    name=r.name,
                    place=r.place,
                    rating_before=before,
                    rating_after=after,
                    delta=after - before,
                    provisional=m.provisional(skill),
                )
            )
        return PublicMatch(match_id=bare, model=model, rated=bool(changes), changes=changes)
