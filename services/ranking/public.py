"""The public rating reads (`/api/ratings/*`, no token): what players see.

Every rating here is `Model.player_rating` (a rating on mu: a win never lowers it, a loss
or an abandonment never raises it; services/ranking/ratings.py), rounded to the nearest
integer; `delta` is the difference of the two rounded numbers. The operator's ordinal stays
under `/api/ranking/*`. The match service proxies these routes for its pages
(services/match/ratings_proxy.py).
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Any

import msgspec
import sqlalchemy as sa
from litestar import Controller, get
from litestar.datastructures import State
from litestar.params import FromPath, QueryParameter

from domain.errors import Invalid, NotFound
from domain.streams import match_id_of, match_stream
from services.ranking.ratings import DEFAULT_MODEL, MODELS, Model, Skill
from services.shared.errors import error_responses

__all__ = ["PublicRatingsController"]

MAX_OFFSET = 1_000_000_000


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


def _model(name: str) -> Model:
    model = MODELS.get(name)
    if model is None:
        raise Invalid(f"model: one of {', '.join(MODELS)}", field="model")
    return model


def _shown(model: Model, mu: float) -> int:
    """The player rating of a stored mu, rounded (it depends on mu alone)."""
    return round(model.player_rating(Skill(mu=mu, sigma=0.0)))


def _engine(state: State) -> Any:
    return state.ranking.engine


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
        responses=error_responses(422),
    )
    async def leaderboard(
        self,
        state: State,
        model: ModelParam = DEFAULT_MODEL,
        limit: Annotated[int, QueryParameter(ge=1, le=500)] = 100,
        offset: Annotated[int, QueryParameter(ge=0, le=MAX_OFFSET)] = 0,
    ) -> PublicLeaderboard:
        m = _model(model)
        # player_rating increases with mu in every model: ordering by mu is by rating.
        query = sa.text(
            "SELECT r.player_id, r.name, r.mu, r.provisional, r.matches FROM ratings r "
            "WHERE r.model = :m "
            "ORDER BY r.provisional, r.mu DESC, r.player_id LIMIT :limit OFFSET :offset"
        )
        async with _engine(state).connect() as conn:
            rows = (await conn.execute(query, {"m": model, "limit": limit, "offset": offset})).all()
        return PublicLeaderboard(
            model=model,
            entries=[
                BoardEntry(
                    rank=offset + i + 1,
                    player_id=r.player_id,
                    name=r.name,
                    rating=_shown(m, r.mu),
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
        responses=error_responses(404, 422),
    )
    async def player(
        self,
        state: State,
        player_id: FromPath[str],
        model: ModelParam = DEFAULT_MODEL,
        limit: Annotated[
            int, QueryParameter(ge=1, le=500, description="the newest N rated matches")
        ] = 50,
    ) -> PublicPlayer:
        m = _model(model)
        if "\x00" in player_id or len(player_id) > 200:  # no such player id can exist
            raise NotFound("no rating for this player")
        async with _engine(state).connect() as conn:
            row = (
                await conn.execute(
                    sa.text(
                        "SELECT r.mu, r.provisional, r.matches, r.name FROM ratings r "
                        "WHERE r.player_id = :p AND r.model = :m"
                    ),
                    {"p": player_id, "m": model},
                )
            ).one_or_none()
            history = (
                await conn.execute(
                    sa.text(
                        "SELECT match_stream, finished_at, place, players, left_match, "
                        "mu_before, mu_after FROM rating_changes WHERE player_id = :p "
                        "AND model = :m ORDER BY position DESC LIMIT :limit"
                    ),
                    {"p": player_id, "m": model, "limit": limit},
                )
            ).all()
        if row is None:
            raise NotFound("no rating for this player")
        entries = []
        for h in history:
            before, after = _shown(m, h.mu_before), _shown(m, h.mu_after)
            entries.append(
                HistoryEntry(
                    match_id=match_id_of(h.match_stream),
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
            rating=_shown(m, row.mu),
            provisional=row.provisional,
            matches=row.matches,
            history=entries,
        )

    @get(
        "/matches/{match_id:str}",
        operation_id="getPublicMatchRatings",
        summary="The rating changes of one match",
        description="`rated` is false (and `changes` empty) for a match with no rating rows: "
        "casual, unfinished, or not reached by the ranking consumer yet. `provisional` is the "
        "player's state after this match.",
        responses=error_responses(404, 422),
    )
    async def match(
        self, state: State, match_id: FromPath[str], model: ModelParam = DEFAULT_MODEL
    ) -> PublicMatch:
        m = _model(model)
        try:
            bare = str(uuid.UUID(match_id))
        except ValueError:
            raise Invalid("match_id: not a UUID", field="match_id") from None
        stream = match_stream(bare)
        async with _engine(state).connect() as conn:
            known = await conn.scalar(
                # A match stream begins with MatchCreated (version 0), from the log: the
                # match service's `matches` table is its own.
                sa.text("SELECT 1 FROM events WHERE stream_id = :s AND stream_version = 0"),
                {"s": stream},
            )
            rows = (
                await conn.execute(
                    sa.text(
                        "SELECT c.player_id, r.name, c.place, c.mu_before, c.mu_after, "
                        "c.sigma_after, (SELECT count(*) FROM rating_changes e "
                        "WHERE e.player_id = c.player_id AND e.model = c.model "
                        "AND e.position <= c.position) AS matches "
                        "FROM rating_changes c JOIN ratings r "
                        "ON r.model = c.model AND r.player_id = c.player_id "
                        "WHERE c.model = :m AND c.match_stream = :s "
                        "ORDER BY c.place, c.player_id"
                    ),
                    {"m": model, "s": stream},
                )
            ).all()
        if not known and not rows:
            raise NotFound("no such match")
        changes = []
        for r in rows:
            before, after = _shown(m, r.mu_before), _shown(m, r.mu_after)
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
