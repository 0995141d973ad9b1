"""Guest players: create one, who am I, a new name, my tables (what every route takes from a
request, the bearer player, is in `services/match/callers.py`)."""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Controller, Request, get, post, put
from litestar.di import NamedDependency
from litestar.params import JSONBody
from sqlalchemy.ext.asyncio import AsyncEngine

from services.match.callers import BEARER, CurrentPlayer, provide_player
from services.match.guests import Guests
from services.match.parties.my_tables import tables_of
from services.match.parties.schemas import TablesOut
from services.match.players.schemas import NewGuest, NewPlayer, PlayerOut
from services.shared.eventstore import EventStore

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
    async def create(self, data: JSONBody[NewGuest], guests: NamedDependency[Guests]) -> PlayerOut:
        name = None if isinstance(data.name, msgspec.UnsetType) else data.name
        player, token = await guests.create(name, data.lang)
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
        guests: NamedDependency[Guests],
        player: CurrentPlayer,
    ) -> PlayerOut:
        token = request.headers.get("authorization", "").partition(" ")[2].strip()
        renamed = await guests.rename(player, token, data.name)
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
    async def my_tables(
        self,
        player: CurrentPlayer,
        engine: NamedDependency[AsyncEngine],
        store: NamedDependency[EventStore],
    ) -> TablesOut:
        return TablesOut(tables=await tables_of(engine, store, player.id))
