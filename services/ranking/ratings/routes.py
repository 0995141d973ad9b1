"""The ratings' routes: the operator's under `/api/ranking` (token needed: leaderboard by
operator rating, a player's ratings and history, distribution, matches per day, swings,
consumer lag, recompute) and the public reads under `/api/ratings` (no token: what players
see).

Every public rating is `Model.player_rating` (a rating on mu: a win never lowers it, a loss
or an abandonment never raises it; domain/ratings.py), rounded to the nearest integer;
`delta` is the difference of the two rounded numbers. The operator's ordinal stays under
`/api/ranking/*`. The rows come from the ratings queries (services/ranking/ratings/
queries.py: the leaderboard is the operator's one query, in the players' order), on the
standby when the service has one (the `lagging` dependency: they may be seconds old;
docs/scaling.md, Reads from a standby); the routes only show them. The match service
proxies the public routes for its pages (services/match/ratings/routes.py).

Handlers take the narrow parts they use as dependencies, provided by the composition root
(services/ranking/app.py): `lagging`, `queries`, `reads`, `consumer`, `recomputer`.
"""

from __future__ import annotations

import math
import uuid
from typing import Annotated

import msgspec
from litestar import Controller, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath, FromQuery, QueryParameter

from domain.errors import Invalid, NotFound
from domain.ratings import DEFAULT_MODEL, MODELS, Skill, model_named
from domain.streams import match_stream
from services.ranking.guards import operator_guard
from services.ranking.ratings.consumer import RankingConsumer
from services.ranking.ratings.queries import RatingQueries
from services.ranking.ratings.schemas import (
    BoardEntry,
    ChangeOut,
    DayCount,
    Distribution,
    HistoryEntry,
    Lag,
    Leaderboard,
    LeaderboardEntry,
    MatchChange,
    PlayerRatings,
    PublicLeaderboard,
    PublicMatch,
    PublicPlayer,
    RatingOut,
    RecomputeOut,
    Swing,
)
from services.ranking.ratings.service import Recomputer
from services.shared.database import ReadRoute, RoutedReads
from services.shared.errors import error_responses
from services.shared.standing import Completion, Reputations, completion_out, reputations

__all__ = ["PublicRatingsController", "RankingController"]

# The ratings queries on the primary, and routed to the standby (when it answers).
Queries = NamedDependency[RatingQueries]
Lagging = NamedDependency[RoutedReads[RatingQueries]]

# A player's rating in one model, their history and completion, read on one engine.
_PlayerRows = tuple[RatingOut, list[ChangeOut], Completion | None]

# ------------------------------------------------------------------- the operator API


Model = Annotated[
    str,
    QueryParameter(description=f"rating model: {', '.join(MODELS)}"),
]


# Bounds of query values that go into SQL: beyond them PostgreSQL's interval or bigint
# arithmetic overflows (a 500), and no real question needs them.
MAX_DAYS = 36_500  # a century
MAX_OFFSET = 1_000_000_000


class RankingController(Controller):
    path = "/api/ranking"
    tags = ("ranking",)
    guards = [operator_guard]  # noqa: RUF012 - Litestar's class attribute
    security = [{"operator": []}]  # noqa: RUF012 - Litestar's class attribute

    @get(
        "/leaderboard",
        operation_id="getLeaderboard",
        summary="Players by operator rating, with the player rating the site shows",
    )
    async def leaderboard(
        self,
        lagging: Lagging,
        model: Model = DEFAULT_MODEL,
        min_matches: Annotated[int, QueryParameter(ge=0, le=MAX_OFFSET)] = 0,
        active_days: Annotated[
            int | None,
            QueryParameter(ge=1, le=MAX_DAYS, description="played within the last N days"),
        ] = None,
        include_provisional: FromQuery[bool] = True,
        limit: Annotated[int, QueryParameter(ge=1, le=1000)] = 100,
        offset: Annotated[int, QueryParameter(ge=0, le=MAX_OFFSET)] = 0,
    ) -> Leaderboard:
        m = model_named(model)
        rows = await lagging(
            lambda q: q.leaderboard(
                model,
                by="rating",
                min_matches=min_matches,
                active_days=active_days,
                include_provisional=include_provisional,
                limit=limit,
                offset=offset,
            )
        )
        entries = [
            LeaderboardEntry(
                rank=offset + i + 1, player_rating=m.shown_rating(r.mu), **msgspec.structs.asdict(r)
            )
            for i, r in enumerate(rows)
        ]
        return Leaderboard(model=model, entries=entries)

    @get(
        "/players/{player_id:str}",
        operation_id="getPlayerRating",
        summary="A player's ratings in every model and their history in one",
        responses=error_responses("not_found"),
    )
    async def player(
        self,
        lagging: Lagging,
        player_id: FromPath[str],
        model: Model = DEFAULT_MODEL,
        limit: Annotated[
            int, QueryParameter(ge=1, le=5000, description="the newest N rated matches")
        ] = 500,
    ) -> PlayerRatings:
        model_named(model)
        if "\x00" in player_id:  # PostgreSQL text cannot hold NUL: no such player
            raise NotFound("no rating for this player")

        async def read(q: RatingQueries) -> tuple[list[RatingOut], list[ChangeOut]]:
            rows = await q.ratings(player_id)
            return rows, (await q.history(player_id, model, limit) if rows else [])

        # A player rated a moment ago may not be on the standby yet: ask the primary.
        rows, history = await lagging(read, complete=lambda got: bool(got[0]))
        if not rows:
            raise NotFound("no rating for this player")
        return PlayerRatings(
            player_id=player_id,
            name=rows[0].name,
            ratings=rows,
            history=history[::-1],  # oldest first: a chart's order
        )

    @get(
        "/distribution",
        operation_id="getRatingDistribution",
        summary="How many players fall in each rating bucket",
    )
    async def distribution(
        self,
        lagging: Lagging,
        model: Model = DEFAULT_MODEL,
        # At least 0.01: a tiny bucket made `rating / bucket` overflow in SQL (500). Every
        # rating model's values lie well within ±10⁶, so 0.01 keeps the quotient small.
        bucket: Annotated[float, QueryParameter(ge=0.01, le=10_000)] = 50.0,
        min_matches: Annotated[int, QueryParameter(ge=0)] = 0,
    ) -> Distribution:
        model_named(model)
        if not math.isfinite(bucket):  # NaN passes the bounds (every comparison is false)
            raise Invalid("bucket: must be a number from 0.01 to 10000", field="bucket")
        buckets = await lagging(lambda q: q.distribution(model, bucket, min_matches))
        return Distribution(model=model, bucket=bucket, buckets=buckets)

    @get(
        "/matches-per-day",
        operation_id="getMatchesPerDay",
        summary="Rated matches per day (UTC)",
    )
    async def matches_per_day(
        self, lagging: Lagging, days: Annotated[int, QueryParameter(ge=1, le=3650)] = 30
    ) -> list[DayCount]:
        return await lagging(lambda q: q.matches_per_day(days))

    @get(
        "/swings",
        operation_id="getLargestSwings",
        summary="The largest rating changes of single matches",
    )
    async def swings(
        self,
        lagging: Lagging,
        model: Model = DEFAULT_MODEL,
        days: Annotated[int | None, QueryParameter(ge=1, le=MAX_DAYS)] = None,
        limit: Annotated[int, QueryParameter(ge=1, le=500)] = 20,
    ) -> list[Swing]:
        model_named(model)
        return await lagging(lambda q: q.swings(model, days, limit))

    @get(
        "/lag",
        operation_id="getConsumerLag",
        summary="How far the consumer is behind the log",
    )
    async def lag(self, queries: Queries, consumer: NamedDependency[RankingConsumer]) -> Lag:
        return await queries.lag(consumer.active)

    @post(
        "/recompute",
        operation_id="recomputeRatings",
        summary="Rebuild all ratings from the event log (operator)",
        description="Builds new tables from scratch and swaps them in; the live tables "
        "serve until then. Returns the hash of all ratings (equal for equal logs).",
        status_code=200,
        responses=error_responses("conflict", "recompute_not_permitted"),
    )
    async def recompute(self, recomputer: NamedDependency[Recomputer]) -> RecomputeOut:
        return await recomputer.run()


# -------------------------------------------------------------------- the public reads

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
        lagging: Lagging,
        model: ModelParam = DEFAULT_MODEL,
        limit: Annotated[int, QueryParameter(ge=1, le=500)] = 100,
        offset: Annotated[int, QueryParameter(ge=0, le=MAX_OFFSET)] = 0,
    ) -> PublicLeaderboard:
        m = model_named(model)
        rows = await lagging(
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
        lagging: Lagging,
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
        found = await lagging(read, complete=lambda got: got is not None)
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
        reads: NamedDependency[ReadRoute],
        ids: Annotated[
            str, QueryParameter(min_length=1, max_length=4_000, description="player ids, a,b,c")
        ],
    ) -> Reputations:
        return await reads.read(lambda engine: reputations(engine, ids))

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
        self,
        lagging: Lagging,
        queries: Queries,
        match_id: FromPath[str],
        model: ModelParam = DEFAULT_MODEL,
    ) -> PublicMatch:
        m = model_named(model)
        try:
            bare = str(uuid.UUID(match_id))
        except ValueError:
            raise Invalid("match_id: not a UUID", field="match_id") from None
        stream = match_stream(bare)
        # A rated match's changes never change; one not rated on the standby may be
        # rated on the primary already (the table page polls for it): ask it.
        rows = await lagging(lambda q: q.match_changes(model, stream), complete=bool)
        if not rows and not await queries.match_exists(stream):
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
