"""Arena tournaments over HTTP (docs/arenas.md): list, create, read, join, pause, continue,
cancel. Thin: each endpoint calls the service's `arenas` and shows its answer."""

from __future__ import annotations

from typing import Any

from litestar import Controller, MediaType, Request, Response, get, post
from litestar.di import NamedDependency
from litestar.openapi.datastructures import ResponseSpec
from litestar.params import FromPath, JSONBody

from domain.errors import Forbidden, Unauthenticated
from replays.tournament import TournamentFile, dump_tournament
from services.match.arenas.schemas import (
    ArenaCancel,
    ArenaCreate,
    ArenaJoin,
    ArenaListOut,
    ArenaView,
)
from services.match.arenas.service import Arenas
from services.match.callers import BEARER, CurrentPlayer, current_player, provide_player
from services.match.guests import Guests, Player
from services.match.ids import check_id
from services.match.replays.tournament_export import tournament_from_store
from services.shared.errors import error_responses
from services.shared.eventstore import EventStore
from services.shared.operator import is_operator
from services.shared.settings import Settings

__all__ = ["TournamentsController"]


async def _caller(request: Request[Any, Any, Any], guests: Guests) -> Player | None:
    """The guest a request names, if it sends a token (a wrong one is a 401)."""
    if not request.headers.get("authorization"):
        return None
    return await current_player(request, guests)


class TournamentsController(Controller):
    path = "/api/tournaments"
    tags = ("tournaments",)
    dependencies = {"player": provide_player}  # noqa: RUF012 - Litestar's declaration style

    @get(
        "/",
        operation_id="listTournaments",
        summary="The public arenas: upcoming, live and the last finished",
    )
    async def listing(self, arenas: NamedDependency[Arenas]) -> ArenaListOut:
        return await arenas.listing()

    @post(
        "/",
        operation_id="createTournament",
        summary="Create a private arena (reached by its link, never listed)",
        status_code=201,
        security=BEARER,
        responses=error_responses("bad_name"),
    )
    async def create(
        self, data: JSONBody[ArenaCreate], arenas: NamedDependency[Arenas], player: CurrentPlayer
    ) -> ArenaView:
        state = await arenas.create(
            name=data.name,
            seats=data.seats,
            rules=data.rules,
            turn_limit=data.turn_limit,
            minutes=data.minutes,
            starts_at=arenas.clock() + data.starts_in,
            private=True,
            creator_id=player.id,
        )
        assert state.created is not None
        return await arenas.view(state.created.arena_id, player.id)

    @get(
        "/{arena_id:str}",
        operation_id="getTournament",
        summary="An arena: clock, standings, matches, podium (and yours, with a token)",
        responses=error_responses("unauthorized", "not_found"),
    )
    async def read(
        self,
        arena_id: FromPath[str],
        request: Request[Any, Any, Any],
        guests: NamedDependency[Guests],
        arenas: NamedDependency[Arenas],
    ) -> ArenaView:
        arena_id = check_id(arena_id, "arena")
        caller = await _caller(request, guests)
        return await arenas.view(arena_id, caller.id if caller else None)

    @post(
        "/{arena_id:str}/join",
        operation_id="joinTournament",
        summary="Join an arena (paired as soon as it runs and others wait)",
        status_code=200,
        security=BEARER,
        responses=error_responses(
            "not_found",
            "ranked_paused",
            "seated_elsewhere",
            "arena_cancelled",
            "arena_over",
            "already_joined",
            "conflict",
        ),
    )
    async def join(
        self,
        arena_id: FromPath[str],
        data: JSONBody[ArenaJoin],
        arenas: NamedDependency[Arenas],
        player: CurrentPlayer,
    ) -> ArenaView:
        arena_id = check_id(arena_id, "arena")
        await arenas.join(player, arena_id, data.client_seed)
        return await arenas.view(arena_id, player.id)

    @post(
        "/{arena_id:str}/pause",
        operation_id="pauseTournament",
        summary="Stop being paired in an arena (your running match is played out)",
        status_code=200,
        security=BEARER,
        responses=error_responses(
            "not_found", "not_joined", "already_paused", "arena_over", "conflict"
        ),
    )
    async def pause(
        self, arena_id: FromPath[str], arenas: NamedDependency[Arenas], player: CurrentPlayer
    ) -> ArenaView:
        arena_id = check_id(arena_id, "arena")
        await arenas.pause(player, arena_id)
        return await arenas.view(arena_id, player.id)

    @post(
        "/{arena_id:str}/continue",
        operation_id="continueTournament",
        summary="Be paired again in an arena after a pause",
        status_code=200,
        security=BEARER,
        responses=error_responses(
            "not_found",
            "ranked_paused",
            "seated_elsewhere",
            "not_joined",
            "arena_cancelled",
            "arena_over",
            "not_paused",
            "conflict",
        ),
    )
    async def resume(
        self, arena_id: FromPath[str], arenas: NamedDependency[Arenas], player: CurrentPlayer
    ) -> ArenaView:
        arena_id = check_id(arena_id, "arena")
        await arenas.resume(player, arena_id)
        return await arenas.view(arena_id, player.id)

    @post(
        "/{arena_id:str}/cancel",
        operation_id="cancelTournament",
        summary="Cancel an arena (an operator, or a private arena's creator), saying why",
        status_code=200,
        security=[{"operator": []}, {"bearer": []}],
        responses=error_responses(
            "not_found", "forbidden", "arena_cancelled", "arena_over", "bad_reason", "conflict"
        ),
    )
    async def cancel(
        self,
        arena_id: FromPath[str],
        data: JSONBody[ArenaCancel],
        request: Request[Any, Any, Any],
        settings: NamedDependency[Settings],
        guests: NamedDependency[Guests],
        arenas: NamedDependency[Arenas],
    ) -> ArenaView:
        arena_id = check_id(arena_id, "arena")
        state = await arenas.state(arena_id)
        authorization = request.headers.get("authorization", "")
        if is_operator(authorization, settings.operator_token):
            by = "operator"
        else:
            caller = await _caller(request, guests)
            if caller is None:
                raise Unauthenticated("send Authorization: Bearer <operator or guest token>")
            assert state.created is not None
            if caller.id != state.created.creator_id:
                raise Forbidden("only an operator or the arena's creator may cancel it")
            by = caller.id
        await arenas.cancel(arena_id, data.reason, by)
        return await arenas.view(arena_id, None if by == "operator" else by)

    @get(
        "/{arena_id:str}/export",
        operation_id="exportTournament",
        summary="The arena's file: its events and every match's replay (`ludo tournament verify`)",
        description="The `ludo-tournament` JSON file (docs/arenas.md): the arena's stream "
        "with its hashes, each match's replay file and the standings, verifiable offline. "
        "Only once the arena is over (finished, or cancelled with no match running): 409 "
        "`arena_running` before, as running matches' seeds are secret. Sent as an "
        "attachment `tournament-<id>.ludo-tournament.json`.",
        media_type=MediaType.JSON,
        responses={
            200: ResponseSpec(
                data_container=TournamentFile,
                description="the tournament file (`replays.tournament.TournamentFile`)",
                generate_examples=False,
            ),
            **error_responses("not_found", "arena_running"),
        },
    )
    async def export(
        self, arena_id: FromPath[str], store: NamedDependency[EventStore]
    ) -> Response[bytes]:
        arena_id = check_id(arena_id, "arena")
        exported = await tournament_from_store(store, arena_id, exported_by="match-service")
        return Response(
            dump_tournament(exported),
            media_type=MediaType.JSON,
            headers={
                "Content-Disposition": (
                    f'attachment; filename="tournament-{arena_id}.ludo-tournament.json"'
                )
            },
        )
