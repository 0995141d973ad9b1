"""Who sends a request: guest players (create one, who am I), and what every controller
takes from a request: the bearer player (`Authorization: Bearer <token>`), the service, and
the `Idempotency-Key` header."""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Controller, Request, get, post, put
from litestar.params import JSONBody

from services.match.callers import BEARER, CurrentPlayer, Service, provide_player
from services.match.parties.my_tables import tables_of
from services.match.parties.schemas import TablesOut
from services.match.players.schemas import NewGuest, NewPlayer, PlayerOut

__all__ = ["PlayersController"]


class PlayersController(Controller):
    path = "/api/players"
    tags = ("players",)

    @post(
        "/",
        operation_id="createPlayer",
        summary="Create a guest player",
        description="Returns the id, the name and a secret token; keep the token (it is "
        "shown once). Without `name`, the guest gets one made up in `lang` (a colour, an "
        "animal and a number), to change later with `renameMe`.",
        status_code=201,
    )
    async def create(self, data: JSONBody[NewGuest], service: Service) -> PlayerOut:
        name = None if isinstance(data.name, msgspec.UnsetType) else data.name
        player, token = await service.guests.create(name, data.lang)
        return PlayerOut(id=player.id, name=player.name, token=token)

    @put(
        "/me",
        operation_id="renameMe",
        summary="Rename the player of the bearer token",
        description="The same guest (id, token, ratings) under a new name; seats already "
        "taken keep the name they were taken with.",
        dependencies={"player": provide_player},
        security=BEARER,
    )
    async def rename(
        self,
        request: Request[Any, Any, Any],
        data: JSONBody[NewPlayer],
        service: Service,
        player: CurrentPlayer,
    ) -> PlayerOut:
        token = request.headers.get("authorization", "").partition(" ")[2].strip()
        renamed = await service.guests.rename(player, token, data.name)
        return PlayerOut(id=renamed.id, name=renamed.name)

    @get(
        "/me",
        operation_id="getMe",
        summary="The player of the bearer token",
        dependencies={"player": provide_player},
        security=BEARER,
    )
    async def me(self, player: CurrentPlayer) -> PlayerOut:
        return PlayerOut(id=player.id, name=player.name)

    @get(
        "/me/tables",
        operation_id="myTables",
        summary="The tables the player of the bearer token sits at",
        description="Parties with a seat of this player that are open, whose match is "
        "running, or whose match finished within the last 2 hours (running matches "
        "first, then open parties, then finished ones, each newest first); `action` says "
        "what one press on `href` does.",
        dependencies={"player": provide_player},
        security=BEARER,
    )
    async def my_tables(self, player: CurrentPlayer, service: Service) -> TablesOut:
        return TablesOut(tables=await tables_of(service.engine, service.store, player.id))
