"""What every controller takes from a request: the bearer player
(`Authorization: Bearer <token>`), the `Idempotency-Key` header, the operator's guard."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Request
from litestar.connection import ASGIConnection
from litestar.di import NamedDependency, Provide
from litestar.handlers.base import BaseRouteHandler
from litestar.params import HeaderParameter

from domain.errors import Unauthenticated
from services.match.guests import Guests, Player
from services.shared.limits import Limits, client_key
from services.shared.operator import is_operator
from services.shared.settings import Settings

__all__ = [
    "BEARER",
    "OPERATOR",
    "CurrentPlayer",
    "IdempotencyKey",
    "current_player",
    "operator_guard",
    "provide_player",
]

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


async def current_player(
    request: Request[Any, Any, Any], guests: NamedDependency[Guests]
) -> Player:
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
    player = await guests.for_token(token)
    if player is None:
        limits.auth_failed(client)
        raise Unauthenticated("unknown token")
    return player


provide_player = Provide(current_player)


# The OpenAPI security requirement of an operator route.
OPERATOR: list[dict[str, list[str]]] = [{"operator": []}]


def operator_guard(connection: ASGIConnection[Any, Any, Any, Any], _: BaseRouteHandler) -> None:
    """The match service's operator routes: `Authorization: Bearer $LUDO_OPERATOR_TOKEN`,
    checked exactly as the ranking API does (401 without it; refused when it is unset)."""
    settings: Settings = connection.app.state.parts.settings
    authorization = connection.headers.get("authorization", "")
    if not is_operator(authorization, settings.operator_token):
        raise Unauthenticated("send Authorization: Bearer <operator token>")
