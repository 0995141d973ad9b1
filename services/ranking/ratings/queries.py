"""Every read the ranking service answers with: the rating tables, its checkpoint, and
(through the event store, the only reader of `events`) the log's head and whether a
match exists. `RatingQueries` is the ranking service's query part (the `queries` and
`lagging` dependencies, services/ranking/app.py): the operator API and the public ratings
(services/ranking/ratings/routes.py) call it, and hold no SQL of their own.

Its rows are the operator API's response shapes (`RatingOut`, `ChangeOut`, …, in
schemas.py beside it); the public ratings show them rounded and on the player scale. One
leaderboard query
serves both leaderboards (`leaderboard`, ordered `by` the operator's displayed rating or
by the players' view: established first, then by mu).
"""

from __future__ import annotations

from typing import Any, Final, Literal, NamedTuple

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.ratings import DEFAULT_MODEL
from domain.streams import match_id_of
from services.ranking.checkpoints import read_checkpoint
from services.ranking.ratings.schemas import Bucket, ChangeOut, DayCount, Lag, RatingOut, Swing
from services.shared.eventstore import Cursor, EventStore
from services.shared.standing import Completion, completions

__all__ = ["MatchChange", "RatingQueries"]


class MatchChange(NamedTuple):
    """A player's rating change in one match, with how many rated matches they had
    played by then (to say whether they were still provisional after it)."""

    player_id: str
    name: str | None
    place: int
    mu_before: float
    mu_after: float
    sigma_after: float
    matches: int


_RATING_COLUMNS: Final = (
    "r.player_id, r.name, r.model, r.rating, r.mu, r.sigma, r.provisional, r.matches, "
    "r.last_match_at"
)
# The leaderboard's orders: the operator's (displayed rating) and the players' (player
# rating increases with mu in every model, so by mu is by it; established players first).
Order = Literal["rating", "player"]
_ORDERS: Final[dict[str, str]] = {
    "rating": "r.rating DESC, r.player_id",
    "player": "r.provisional, r.mu DESC, r.player_id",
}
_LEADERBOARD: Final = (
    f"SELECT {_RATING_COLUMNS} FROM ratings r "
    "WHERE r.model = :m AND r.matches >= :min "
    "AND (CAST(:days AS integer) IS NULL OR "
    "r.last_match_at >= now() - make_interval(days => CAST(:days AS integer))) "
    "AND (:prov OR NOT r.provisional) "
    "ORDER BY {order} LIMIT :limit OFFSET :offset"
)


def _rating(row: Any) -> RatingOut:
    return RatingOut(
        player_id=row.player_id,
        name=row.name,
        model=row.model,
        rating=row.rating,
        mu=row.mu,
        sigma=row.sigma,
        provisional=row.provisional,
        matches=row.matches,
        last_match_at=row.last_match_at,
    )


def _change(h: Any) -> ChangeOut:
    return ChangeOut(
        match_id=match_id_of(h.match_stream),
        model=h.model,
        place=h.place,
        players=h.players,
        left_match=h.left_match,
        rating_before=h.rating_before,
        rating_after=h.rating_after,
        delta=h.rating_after - h.rating_before,
        mu_before=h.mu_before,
        mu_after=h.mu_after,
        sigma_before=h.sigma_before,
        sigma_after=h.sigma_after,
        finished_at=h.finished_at,
        library=h.library,
        params=h.params,
    )


class RatingQueries:
    """The ranking service's reads (see the module docstring). Arguments arrive checked
    by the controllers (model names, bounds)."""

    def __init__(self, engine: AsyncEngine, store: EventStore, checkpoint: str) -> None:
        self.engine = engine
        self.store = store
        self.checkpoint = checkpoint

    async def _rows(self, sql: str, params: dict[str, Any]) -> list[Any]:
        async with self.engine.connect() as conn:
            return list((await conn.execute(sa.text(sql), params)).all())

    async def leaderboard(
        self,
        model: str,
        *,
        by: Order,
        min_matches: int = 0,
        active_days: int | None = None,
        include_provisional: bool = True,
        limit: int = 100,
        offset: int = 0,
    ) -> list[RatingOut]:
        """The players of `model` in the order `by`, after the filters, from `offset`."""
        params = {
            "m": model,
            "min": min_matches,
            "days": active_days,
            "prov": include_provisional,
            "limit": limit,
            "offset": offset,
        }
        rows = await self._rows(_LEADERBOARD.format(order=_ORDERS[by]), params)
        return [_rating(r) for r in rows]

    async def ratings(self, player_id: str) -> list[RatingOut]:
        """The player's rating in every model (none: never rated)."""
        sql = f"SELECT {_RATING_COLUMNS} FROM ratings r WHERE r.player_id = :p ORDER BY r.model"
        return [_rating(r) for r in await self._rows(sql, {"p": player_id})]

    async def history(self, player_id: str, model: str, limit: int) -> list[ChangeOut]:
        """The player's newest `limit` rating changes in `model`, newest first."""
        rows = await self._rows(
            "SELECT * FROM rating_changes WHERE player_id = :p AND model = :m "
            "ORDER BY position DESC LIMIT :limit",
            {"p": player_id, "m": model, "limit": limit},
        )
        return [_change(h) for h in rows]

    async def distribution(self, model: str, bucket: float, min_matches: int) -> list[Bucket]:
        """How many players of `model` fall in each rating bucket of width `bucket`."""
        rows = await self._rows(
            "SELECT floor(rating / :b) AS k, count(*) AS n FROM ratings "
            "WHERE model = :m AND matches >= :min GROUP BY k ORDER BY k",
            {"b": bucket, "m": model, "min": min_matches},
        )
        return [Bucket(low=r.k * bucket, high=(r.k + 1) * bucket, players=r.n) for r in rows]

    async def matches_per_day(self, days: int) -> list[DayCount]:
        """Rated matches per UTC day, for the last `days` days."""
        rows = await self._rows(
            "SELECT (finished_at AT TIME ZONE 'UTC')::date AS day, "
            "count(DISTINCT match_stream) AS n FROM rating_changes "
            "WHERE model = :m AND finished_at >= "
            "(now() AT TIME ZONE 'UTC')::date - :days + 1 "
            "GROUP BY day ORDER BY day",
            {"m": DEFAULT_MODEL, "days": days},
        )
        return [DayCount(day=r.day, matches=r.n) for r in rows]

    async def swings(self, model: str, days: int | None, limit: int) -> list[Swing]:
        """The largest rating changes of single matches (within the last `days`)."""
        rows = await self._rows(
            "SELECT c.*, r.name FROM rating_changes c JOIN ratings r "
            "ON r.model = c.model AND r.player_id = c.player_id "
            "WHERE c.model = :m AND (CAST(:days AS integer) IS NULL OR "
            "c.finished_at >= now() - make_interval(days => CAST(:days AS integer))) "
            "ORDER BY abs(c.rating_after - c.rating_before) "
            "DESC, c.position, c.player_id LIMIT :limit",
            {"m": model, "days": days, "limit": limit},
        )
        return [
            Swing(
                player_id=r.player_id,
                name=r.name,
                match_id=match_id_of(r.match_stream),
                model=r.model,
                rating_before=r.rating_before,
                rating_after=r.rating_after,
                delta=r.rating_after - r.rating_before,
                finished_at=r.finished_at,
            )
            for r in rows
        ]

    async def lag(self, consuming_here: bool) -> Lag:
        """How far the consumer's checkpoint is behind the log (`EventStore.backlog`)."""
        async with self.engine.begin() as conn:
            cursor: Cursor = await read_checkpoint(conn, self.checkpoint)
        behind = await self.store.backlog(cursor)
        return Lag(
            checkpoint_tx=cursor.tx,
            checkpoint_position=cursor.position,
            head_position=behind.head_position,
            events_behind=behind.events,
            seconds_behind=behind.seconds,
            consuming_here=consuming_here,
        )

    async def match_changes(self, model: str, stream: str) -> list[MatchChange]:
        """The rating changes of one match in `model`, by place."""
        rows = await self._rows(
            "SELECT c.player_id, r.name, c.place, c.mu_before, c.mu_after, "
            "c.sigma_after, (SELECT count(*) FROM rating_changes e "
            "WHERE e.player_id = c.player_id AND e.model = c.model "
            "AND e.position <= c.position) AS matches "
            "FROM rating_changes c JOIN ratings r "
            "ON r.model = c.model AND r.player_id = c.player_id "
            "WHERE c.model = :m AND c.match_stream = :s "
            "ORDER BY c.place, c.player_id",
            {"m": model, "s": stream},
        )
        return [MatchChange(*r) for r in rows]

    async def match_exists(self, stream: str) -> bool:
        """Whether the log holds the match stream (the match service's tables are its own)."""
        return await self.store.stream_version(stream) > 0

    async def completions(self, player_ids: list[str]) -> dict[str, Completion]:
        """Each player's completion over their last 50 ended matches (the reputation
        fold, read as the match service reads it: services/shared/standing.py); players
        with none are absent."""
        return await completions(self.engine, player_ids)
