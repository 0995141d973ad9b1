"""Matches: public state, legal moves, events, fairness; roll, move, reclaim, leave,
concede. The oracle."""

from __future__ import annotations

from typing import Annotated, Any

import structlog
from litestar import Controller, get, post
from litestar.di import NamedDependency
from litestar.handlers import HTTPRouteHandler
from litestar.params import FromPath, JSONBody, QueryParameter
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.errors import Invalid
from domain.notation import NotationError, answer_query
from domain.rules import PRESETS, option_values, options_to_dict
from domain.streams import match_stream
from services.match.callers import BEARER, CurrentPlayer, IdempotencyKey, provide_player
from services.match.ids import check_id
from services.match.play.deadlines import Deadlines
from services.match.play.live_matches import live_matches
from services.match.play.player_commands import PLAYER_COMMANDS, PlayerCommand
from services.match.play.reads import MatchReads
from services.match.play.schemas import (
    CommandOut,
    EventsOut,
    FairnessOut,
    LiveMatchesOut,
    LogOut,
    MatchOut,
    MovePiece,
    MovesOut,
    RuleOptionsOut,
    SendStamp,
    StampOut,
    StampsOut,
)
from services.match.play.service import MatchCommands
from services.match.play.stamps import Stamps, stamp_out
from services.match.play.views import (
    event_view,
    fairness_view,
    match_view,
    moves_view,
    result_events,
)
from services.shared.errors import error_responses
from services.shared.eventstore import AppendResult, EventStore

__all__ = ["MatchesController", "RulesController"]

# A page of the log: the table's log box shows this many lines at first and adds as many
# each time the reader asks for earlier ones.
LOG_PAGE = 50
MAX_LOG_PAGE = 200


def _command_out(result: AppendResult) -> CommandOut:
    return CommandOut(
        stream_id=result.stream_id,
        events=result_events(result),
        version=result.next_version,
        duplicate=result.duplicate,
    )


def _command_route(command: PlayerCommand) -> HTTPRouteHandler:
    """`POST /api/matches/{match_id}/<command.name>`, carried out through the table
    (`play/player_commands.py`) the socket dispatches through as well."""
    route = post(
        f"/{{match_id:str}}/{command.name}",
        operation_id=command.operation_id,
        summary=command.summary,
        status_code=200,
        security=BEARER,
        responses=error_responses(*command.errors),
    )
    if command.takes_piece:

        async def with_piece(
            self: Controller,
            match_id: FromPath[str],
            data: JSONBody[MovePiece],
            commands: NamedDependency[MatchCommands],
            player: CurrentPlayer,
            idempotency_key: IdempotencyKey = None,
        ) -> CommandOut:
            run = command.run(commands, match_id, player, idempotency_key, data.piece)
            return _command_out(await run)

        return route(with_piece)

    async def without_body(
        self: Controller,
        match_id: FromPath[str],
        commands: NamedDependency[MatchCommands],
        player: CurrentPlayer,
        idempotency_key: IdempotencyKey = None,
    ) -> CommandOut:
        run = command.run(commands, match_id, player, idempotency_key, None)
        return _command_out(await run)

    return route(without_body)


class MatchesController(Controller):
    path = "/api/matches"
    tags = ("matches",)
    dependencies = {"player": provide_player}  # noqa: RUF012 - Litestar's declaration style

    @get(
        "/live",
        operation_id="listLiveMatches",
        summary="The matches being played now, to watch",
        description="Newest first, at most 20 (the tables of private arenas left out): "
        "each match's seats with how far their pieces have come, ranked or not, whose "
        "turn, when it began, and `href`, its page (`/match/{id}`: anyone may watch).",
    )
    async def live(
        self,
        engine: NamedDependency[AsyncEngine],
        store: NamedDependency[EventStore],
        matches: NamedDependency[MatchReads],
    ) -> LiveMatchesOut:
        return LiveMatchesOut(matches=await live_matches(engine, store, matches))

    @get(
        "/{match_id:str}",
        operation_id="getMatch",
        summary="Public state of a match",
        responses=error_responses("not_found"),
    )
    async def read(
        self,
        match_id: FromPath[str],
        matches: NamedDependency[MatchReads],
        deadlines: NamedDependency[Deadlines],
    ) -> MatchOut:
        structlog.contextvars.bind_contextvars(match_id=match_id)
        state = await matches.state(match_id)
        match_id = check_id(match_id, "match")
        row = await matches.row(match_stream(match_id))
        return match_view(match_id, state, row, await deadlines.due(match_id))

    @get(
        "/{match_id:str}/moves",
        operation_id="getLegalMoves",
        summary="Legal moves of the seat to act for the die it rolled",
        responses=error_responses("not_found"),
    )
    async def moves(
        self, match_id: FromPath[str], matches: NamedDependency[MatchReads]
    ) -> MovesOut:
        structlog.contextvars.bind_contextvars(match_id=match_id)
        return moves_view(await matches.state(match_id))

    @get(
        "/{match_id:str}/events",
        operation_id="getMatchEvents",
        summary="The match's events from a version on",
        responses=error_responses("not_found"),
    )
    async def events(
        self,
        match_id: FromPath[str],
        matches: NamedDependency[MatchReads],
        from_version: Annotated[int, QueryParameter(name="from", ge=0)] = 0,
    ) -> EventsOut:
        structlog.contextvars.bind_contextvars(match_id=match_id)
        stored = await matches.events(match_id)
        # Versions run from 0 with no gap: the match's version is its count of events.
        return EventsOut(events=[event_view(e) for e in stored[from_version:]], version=len(stored))

    @get(
        "/{match_id:str}/log",
        operation_id="getMatchLog",
        summary="A page of the match's events: the last `limit` before a version",
        description="The events with version < `before` (default: all of them), the last "
        f"`limit` of those (default {LOG_PAGE}, at most {MAX_LOG_PAGE}), in version order; "
        "`older` is the `before` of the page before this one (null at the match's first "
        "event). Pages back through a match of any length from its newest events, as the "
        "table's log loads its earlier lines. A `before` past the match's version is 422 "
        "`invalid` (`field` `before`).",
        responses=error_responses("not_found"),
    )
    async def log(
        self,
        match_id: FromPath[str],
        matches: NamedDependency[MatchReads],
        before: Annotated[int | None, QueryParameter(ge=0)] = None,
        limit: Annotated[int, QueryParameter(ge=1, le=MAX_LOG_PAGE)] = LOG_PAGE,
    ) -> LogOut:
        structlog.contextvars.bind_contextvars(match_id=match_id)
        stored, version = await matches.log_page(match_id, before, limit)
        # Empty only for `before=0`, where nothing is older either.
        first = stored[0].version if stored else 0
        return LogOut(
            events=[event_view(e) for e in stored],
            version=version,
            older=first or None,
        )

    @get(
        "/{match_id:str}/fairness",
        operation_id="getFairness",
        summary="Dice commitment, every roll, and the seed after the end",
        responses=error_responses("not_found"),
    )
    async def fairness(
        self, match_id: FromPath[str], matches: NamedDependency[MatchReads]
    ) -> FairnessOut:
        structlog.contextvars.bind_contextvars(match_id=match_id)
        return fairness_view(await matches.events(match_id))

    @post(
        "/{match_id:str}/stamps",
        operation_id="sendStamp",
        summary="Send a quick-chat stamp from your seat (one every 3 s)",
        description='Body `{"stamp": id}`, an id of the fixed set (docs/api.md, Stamps). '
        "Refused: not seated 403 `spectator`, stamps switched off by the host 409 "
        "`stamps_off`, an id not in the set 422 `unknown_stamp`, within 3 s of your last "
        "stamp 429 `too_soon` (with Retry-After). The match's stream is never touched.",
        status_code=201,
        security=BEARER,
        responses=error_responses(
            "spectator",
            "stamps_off",
            "unknown_stamp",
            "too_soon",
            "not_found",
            "conflict",
            "idempotency_key_reused",
        ),
    )
    async def send_stamp(
        self,
        match_id: FromPath[str],
        data: JSONBody[SendStamp],
        stamps: NamedDependency[Stamps],
        player: CurrentPlayer,
        idempotency_key: IdempotencyKey = None,
    ) -> StampOut:
        structlog.contextvars.bind_contextvars(match_id=match_id)
        result = await stamps.send(match_id, player, data.stamp, idempotency_key)
        return stamp_out(result.events[0])

    @get(
        "/{match_id:str}/stamps",
        operation_id="listStamps",
        summary="Every quick-chat stamp sent at the match, in order",
        responses=error_responses("not_found"),
    )
    async def stamps(self, match_id: FromPath[str], stamps: NamedDependency[Stamps]) -> StampsOut:
        structlog.contextvars.bind_contextvars(match_id=match_id)
        stored = await stamps.read(match_id)
        return StampsOut(stamps=[stamp_out(e) for e in stored], version=len(stored))

    # POST /{match_id}/roll, /move, /reclaim, /leave, /concede: one route per player command.
    roll = _command_route(PLAYER_COMMANDS["roll"])
    move = _command_route(PLAYER_COMMANDS["move"])
    reclaim = _command_route(PLAYER_COMMANDS["reclaim"])
    leave = _command_route(PLAYER_COMMANDS["leave"])
    concede = _command_route(PLAYER_COMMANDS["concede"])


class RulesController(Controller):
    path = "/api/rules"
    tags = ("rules",)

    @get(
        "/options",
        operation_id="rulesOptions",
        summary="The presets and every value each option may take",
        description="What a party settings form offers: `presets` spelled out in full "
        "(`standard` is the default), and per option its values (`enter_on`: any "
        "non-empty subset of the die faces); docs/rules.md#every-option says what each does.",
        sync_to_thread=False,
    )
    def options(self) -> RuleOptionsOut:
        return RuleOptionsOut(
            default="standard",
            presets={name: options_to_dict(r) for name, r in PRESETS.items()},
            values=option_values(),
        )

    @post(
        "/moves",
        operation_id="rulesMoves",
        summary="Rules oracle: the legal moves of one position and die",
        description='Body: `{"rules": {...}, "position": {...}, "die": n}` '
        "(docs/rules.md#notation-for-tools-and-tests); the same as `ludo rules moves` "
        "(docs/design.md#public-contracts).",
        status_code=200,
    )
    async def moves(self, data: JSONBody[Any]) -> dict[str, Any]:
        try:
            return answer_query(data)
        except NotationError as error:
            raise Invalid(str(error), field=error.field) from None
