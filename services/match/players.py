"""Who sends a request: guest players (create one, who am I), and what every controller
takes from a request: the bearer player (`Authorization: Bearer <token>`), the service, and
the `Idempotency-Key` header."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from litestar import Controller, Request, get, post, put
from litestar.di import NamedDependency, Provide
from litestar.params import HeaderParameter, JSONBody

from domain.errors import Unauthenticated
from services.match.guests import Player
from services.match.my_tables import tables_of
from services.match.schemas import NewGuest, NewPlayer, PlayerOut, TablesOut
from services.match.service import MatchService
from services.shared.limits import Limits, client_key

__all__ = [
    "BEARER",
    "CurrentPlayer",
    "IdempotencyKey",
    "PlayersController",
    "Service",
    "current_player",
    "provide_player",
]

Service = NamedDependency[MatchService]
CurrentPlayer = NamedDependency[Player]
IdempotencyKey = Annotated[
    str | None,
    HeaderParameter(
        name="Idempotency-Key",
        required=False,
        description="Retry-safe command id (scoped to your player): a repeat returns the "
        "first outcome and appends nothing",
    ),
]

BEARER: list[dict[str, list[str]]] = [{"bearer": []}]


async def current_player(request: Request[Any, Any, Any], service: Service) -> Player:
    """The guest whose token the request carries; 401 without a valid one."""
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise Unauthenticated("send Authorization: Bearer <token>")
    # A client that sent many unknown tokens lately is refused before the lookup (429).
    limits: Limits = request.app.state.limits
    client = client_key(request.scope)
    limits.check_auth(client)
    player = await service.guests.for_token(token)
    if player is None:
        limits.auth_failed(client)
        raise Unauthenticated("unknown token")
    return player


provide_player = Provide(current_player)


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
