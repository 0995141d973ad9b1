"""Parties (tables): create, list, read, join, leave, CPU seats, settings, start, rematch."""

from __future__ import annotations

import structlog
from litestar import Controller, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath, JSONBody

from domain import party as pd
from services.match.callers import BEARER, CurrentPlayer, IdempotencyKey, provide_player
from services.match.parties.schemas import (
    AddCpu,
    ChangeSettings,
    JoinParty,
    NewParty,
    PartyListOut,
    PartyOut,
    StartOut,
)
from services.match.parties.service import PartyCommands
from services.match.parties.views import party_list_view, party_view
from services.shared.errors import error_responses

__all__ = ["PartiesController"]

# Any command on a party: an unknown party, a command that lost a race (`conflict`), a
# reused Idempotency-Key; the host's: not the host, or the party no longer open.
_ANY = ("not_found", "conflict", "idempotency_key_reused")
_HOST = (*_ANY, "not_host", "not_open")


class PartiesController(Controller):
    path = "/api/parties"
    tags = ("parties",)
    dependencies = {"player": provide_player}  # noqa: RUF012 - Litestar's declaration style

    @post(
        "/",
        operation_id="createParty",
        summary="Open a table; the host sits in seat 0",
        status_code=201,
        security=BEARER,
        responses=error_responses("bad_ruleset", "idempotency_key_reused"),
    )
    async def create(
        self,
        data: JSONBody[NewParty],
        parties: NamedDependency[PartyCommands],
        player: CurrentPlayer,
        idempotency_key: IdempotencyKey = None,
    ) -> PartyOut:
        party_id, state = await parties.create(
            player,
            seats=data.seats,
            rules=data.rules,
            turn_limit=data.turn_limit,
            ranked=data.ranked,
            client_seed=data.client_seed,
            cpu_speed=data.cpu_speed,
            key=idempotency_key,
        )
        return party_view(party_id, state)

    @get(
        "/",
        operation_id="listParties",
        summary="Open tables, newest first",
    )
    async def list_open(self, parties: NamedDependency[PartyCommands]) -> PartyListOut:
        return party_list_view(await parties.list_open())

    @get(
        "/{party_id:str}",
        operation_id="getParty",
        summary="A table",
        responses=error_responses("not_found"),
    )
    async def read(
        self, party_id: FromPath[str], parties: NamedDependency[PartyCommands]
    ) -> PartyOut:
        structlog.contextvars.bind_contextvars(party_id=party_id)
        return party_view(party_id, await parties.load(party_id))

    async def _command(
        self,
        parties: PartyCommands,
        party_id: FromPath[str],
        player: CurrentPlayer,
        key: str | None,
        command: pd.PartyCommand,
    ) -> PartyOut:
        structlog.contextvars.bind_contextvars(party_id=party_id)
        state = await parties.command(party_id, command, player, key)
        return party_view(party_id, state)

    async def _start(
        self,
        parties: PartyCommands,
        party_id: str,
        player: CurrentPlayer,
        key: str | None,
        *,
        rematch: bool,
    ) -> StartOut:
        structlog.contextvars.bind_contextvars(party_id=party_id)
        state, match_id = await parties.start(party_id, player, key, rematch=rematch)
        return StartOut(party=party_view(party_id, state), match_id=match_id)

    @post(
        "/{party_id:str}/join",
        operation_id="joinParty",
        summary="Sit at the table (a given seat or the first free one)",
        status_code=200,
        security=BEARER,
        responses=error_responses(
            *_ANY,
            "not_open",
            "already_seated",
            "party_full",
            "bad_seat",
            "seat_taken",
        ),
    )
    async def join(
        self,
        party_id: FromPath[str],
        parties: NamedDependency[PartyCommands],
        player: CurrentPlayer,
        data: JSONBody[JoinParty | None] = None,
        idempotency_key: IdempotencyKey = None,
    ) -> PartyOut:
        body = data or JoinParty()
        command = pd.JoinParty(
            player_id=player.id, name=player.name, seat=body.seat, client_seed=body.client_seed
        )
        return await self._command(parties, party_id, player, idempotency_key, command)

    @post(
        "/{party_id:str}/leave",
        operation_id="leaveParty",
        summary="Leave the table (before the match starts)",
        status_code=200,
        security=BEARER,
        responses=error_responses(*_ANY, "not_seated", "not_open"),
    )
    async def leave(
        self,
        party_id: FromPath[str],
        parties: NamedDependency[PartyCommands],
        player: CurrentPlayer,
        idempotency_key: IdempotencyKey = None,
    ) -> PartyOut:
        command = pd.LeaveParty(player_id=player.id)
        return await self._command(parties, party_id, player, idempotency_key, command)

    @post(
        "/{party_id:str}/cpus",
        operation_id="addCpu",
        summary="Seat a CPU (host)",
        status_code=200,
        security=BEARER,
        responses=error_responses(*_HOST, "party_full", "bad_seat", "seat_taken"),
    )
    async def add_cpu(
        self,
        party_id: FromPath[str],
        data: JSONBody[AddCpu],
        parties: NamedDependency[PartyCommands],
        player: CurrentPlayer,
        idempotency_key: IdempotencyKey = None,
    ) -> PartyOut:
        command = pd.AddCpu(player_id=player.id, level=data.level, seat=data.seat)
        return await self._command(parties, party_id, player, idempotency_key, command)

    @post(
        "/{party_id:str}/cpus/{seat:int}/remove",
        operation_id="removeCpu",
        summary="Remove the CPU from a seat (host)",
        status_code=200,
        security=BEARER,
        responses=error_responses(*_HOST, "bad_seat", "not_a_cpu"),
    )
    async def remove_cpu(
        self,
        party_id: FromPath[str],
        seat: FromPath[int],
        parties: NamedDependency[PartyCommands],
        player: CurrentPlayer,
        idempotency_key: IdempotencyKey = None,
    ) -> PartyOut:
        command = pd.RemoveCpu(player_id=player.id, seat=seat)
        return await self._command(parties, party_id, player, idempotency_key, command)

    @post(
        "/{party_id:str}/settings",
        operation_id="changePartySettings",
        summary="Change rules, turn limit, ranked or CPU speed (host, before the start), or "
        "stamps on/off (host, any time)",
        status_code=200,
        security=BEARER,
        responses=error_responses(*_HOST, "bad_ruleset"),
    )
    async def settings(
        self,
        party_id: FromPath[str],
        data: JSONBody[ChangeSettings],
        parties: NamedDependency[PartyCommands],
        player: CurrentPlayer,
        idempotency_key: IdempotencyKey = None,
    ) -> PartyOut:
        command = pd.ChangeSettings(
            player_id=player.id,
            ruleset=data.rules,
            turn_limit=data.turn_limit,
            ranked=data.ranked,
            stamps=data.stamps,
            cpu_speed=data.cpu_speed,
        )
        return await self._command(parties, party_id, player, idempotency_key, command)

    @post(
        "/{party_id:str}/start",
        operation_id="startParty",
        summary="Start the match (host; every seat filled)",
        status_code=201,
        security=BEARER,
        responses=error_responses(*_HOST, "seats_empty"),
    )
    async def start(
        self,
        party_id: FromPath[str],
        parties: NamedDependency[PartyCommands],
        player: CurrentPlayer,
        idempotency_key: IdempotencyKey = None,
    ) -> StartOut:
        return await self._start(parties, party_id, player, idempotency_key, rematch=False)

    @post(
        "/{party_id:str}/rematch",
        operation_id="rematchParty",
        summary="Play again after the match ended (first seat rotates with rotate_first)",
        status_code=201,
        security=BEARER,
        responses=error_responses(
            *_ANY, "not_started", "not_seated", "match_running", "arena_table"
        ),
    )
    async def rematch(
        self,
        party_id: FromPath[str],
        parties: NamedDependency[PartyCommands],
        player: CurrentPlayer,
        idempotency_key: IdempotencyKey = None,
    ) -> StartOut:
        return await self._start(parties, party_id, player, idempotency_key, rematch=True)
