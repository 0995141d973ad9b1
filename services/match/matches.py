"""Matches: public state, legal moves, events, fairness; roll, move, reclaim. The oracle."""

from __future__ import annotations

from typing import Annotated, Any

import structlog
from litestar import Controller, get, post
from litestar.params import FromPath, JSONBody, QueryParameter

from domain.dice import die_for_roll
from domain.errors import Invalid
from domain.notation import NotationError, answer_query
from domain.rules import PRESETS, option_values, options_to_dict
from services.match.ids import check_id
from services.match.parties import IdempotencyKey
from services.match.players import BEARER, CurrentPlayer, Service, provide_player
from services.match.schemas import (
    CommandOut,
    EventsOut,
    FairnessOut,
    MatchOut,
    MovePiece,
    MovesOut,
    RollOut,
    RuleOptionsOut,
)
from services.match.views import event_view, match_view, moves_view, result_events, rolls_of
from services.shared.errors import error_responses
from services.shared.eventstore import AppendResult

__all__ = ["MatchesController", "RulesController"]

_COMMAND_ERRORS = error_responses(400, 401, 403, 404, 409, 413, 415, 422)


def _command_out(result: AppendResult) -> CommandOut:
    return CommandOut(
        stream_id=result.stream_id,
        events=result_events(result),
        version=result.next_version,
        duplicate=result.duplicate,
    )


class MatchesController(Controller):
    path = "/api/matches"
    tags = ("matches",)
    dependencies = {"player": provide_player}  # noqa: RUF012 - Litestar's declaration style

    @get(
        "/{match_id:str}",
        operation_id="getMatch",
        summary="Public state of a match",
        responses=error_responses(404),
    )
    async def read(self, match_id: FromPath[str], service: Service) -> MatchOut:
        structlog.contextvars.bind_contextvars(match_id=match_id)
        state = await service.matches.match_state(match_id)
        match_id = check_id(match_id, "match")
        row = await service.matches.match_row(match_id)
        return match_view(
            match_id,
            state,
            party_id=row.party_id if row else None,
            turn_limit=row.turn_limit if row else None,
            ranked=row.ranked if row else False,
            deadline=await service.deadlines.due(match_id),
        )

    @get(
        "/{match_id:str}/moves",
        operation_id="getLegalMoves",
        summary="Legal moves of the seat to act for the die it rolled",
        responses=error_responses(404),
    )
    async def moves(self, match_id: FromPath[str], service: Service) -> MovesOut:
        structlog.contextvars.bind_contextvars(match_id=match_id)
        state = await service.matches.match_state(match_id)
        return moves_view(state)

    @get(
        "/{match_id:str}/events",
        operation_id="getMatchEvents",
        summary="The match's events from a version on",
        responses=error_responses(404, 422),
    )
    async def events(
        self,
        match_id: FromPath[str],
        service: Service,
        from_version: Annotated[int, QueryParameter(name="from", ge=0)] = 0,
    ) -> EventsOut:
        structlog.contextvars.bind_contextvars(match_id=match_id)
        state, stored = await service.matches.load_match(match_id)
        return EventsOut(
            events=[event_view(e) for e in stored[from_version:]], version=state.version
        )

    @get(
        "/{match_id:str}/fairness",
        operation_id="getFairness",
        summary="Dice commitment, every roll, and the seed after the end",
        responses=error_responses(404),
    )
    async def fairness(self, match_id: FromPath[str], service: Service) -> FairnessOut:
        structlog.contextvars.bind_contextvars(match_id=match_id)
        state, stored = await service.matches.load_match(match_id)
        rolls = rolls_of(stored)
        verified: bool | None = None
        if state.server_seed is not None:
            seed = bytes.fromhex(state.server_seed)
            verified = all(die_for_roll(seed, state.client_seed, r.n) == r.value for r in rolls)
        return FairnessOut(
            seed_hash=state.seed_hash,
            client_seed=state.client_seed,
            server_seed=state.server_seed,
            rolls=[RollOut(n=r.n, seat=r.seat, value=r.value) for r in rolls],
            verified=verified,
        )

    @post(
        "/{match_id:str}/roll",
        operation_id="rollDie",
        summary="Roll the die for your seat (the server derives the die)",
        status_code=200,
        security=BEARER,
        responses=_COMMAND_ERRORS,
    )
    async def roll(
        self,
        match_id: FromPath[str],
        service: Service,
        player: CurrentPlayer,
        idempotency_key: IdempotencyKey = None,
    ) -> CommandOut:
        result = await service.commands.roll(match_id, player, idempotency_key)
        return _command_out(result)

    @post(
        "/{match_id:str}/move",
        operation_id="movePiece",
        summary="Move a piece by the die you rolled",
        status_code=200,
        security=BEARER,
        responses=_COMMAND_ERRORS,
    )
    async def move(
        self,
        match_id: FromPath[str],
        data: JSONBody[MovePiece],
        service: Service,
        player: CurrentPlayer,
        idempotency_key: IdempotencyKey = None,
    ) -> CommandOut:
        result = await service.commands.move(match_id, player, data.piece, idempotency_key)
        return _command_out(result)

    @post(
        "/{match_id:str}/reclaim",
        operation_id="reclaimSeat",
        summary="Take your seat back from the CPU stand-in",
        status_code=200,
        security=BEARER,
        responses=_COMMAND_ERRORS,
    )
    async def reclaim(
        self,
        match_id: FromPath[str],
        service: Service,
        player: CurrentPlayer,
        idempotency_key: IdempotencyKey = None,
    ) -> CommandOut:
        result = await service.commands.reclaim(match_id, player, idempotency_key)
        return _command_out(result)

    @post(
        "/{match_id:str}/leave",
        operation_id="leaveMatch",
        summary="Leave the match: a CPU plays your seat until you reclaim it",
        status_code=200,
        security=BEARER,
        responses=_COMMAND_ERRORS,
    )
    async def leave(
        self,
        match_id: FromPath[str],
        service: Service,
        player: CurrentPlayer,
        idempotency_key: IdempotencyKey = None,
    ) -> CommandOut:
        result = await service.commands.leave(match_id, player, idempotency_key)
        return _command_out(result)


class RulesController(Controller):
    path = "/api/rules"
    tags = ("rules",)

    @get(
        "/options",
        operation_id="rulesOptions",
        summary="The presets and every value each option may take (RULES.md §5)",
        description="What a party settings form offers: `presets` spelled out in full "
        "(`standard` is the default), and per option its values (`enter_on`: any "
        "non-empty subset of the die faces).",
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
        summary="Rules oracle: the legal moves of one position and die (DESIGN.md §8)",
        description='Body: `{"rules": {...}, "position": {...}, "die": n}` (RULES.md §6).',
        status_code=200,
        responses=error_responses(400, 413, 415, 422),
    )
    async def moves(self, data: JSONBody[Any]) -> dict[str, Any]:
        try:
            return answer_query(data)
        except NotationError as error:
            raise Invalid(str(error), field=error.field) from None
