"""The match service's operator routes: one guard for all of them (the operator token), and
`GET /api/operator/now`, what the site is doing now (site_now.py). The dispute report
(replays_web.py) uses the same guard."""

from __future__ import annotations

from typing import Any

from litestar import Controller, get
from litestar.connection import ASGIConnection
from litestar.handlers.base import BaseRouteHandler

from domain.errors import Unauthenticated
from services.match.players import Service
from services.match.service import MatchService
from services.match.site_now import SiteNowOut
from services.shared.operator import is_operator

__all__ = ["OPERATOR", "OperatorNowController", "operator_guard"]

# The OpenAPI security requirement of an operator route.
OPERATOR: list[dict[str, list[str]]] = [{"operator": []}]


def operator_guard(connection: ASGIConnection[Any, Any, Any, Any], _: BaseRouteHandler) -> None:
    """The match service's operator routes: `Authorization: Bearer $LUDO_OPERATOR_TOKEN`,
    checked exactly as the ranking API does (401 without it; refused when it is unset)."""
    service: MatchService = connection.app.state.service
    authorization = connection.headers.get("authorization", "")
    if not is_operator(authorization, service.settings.operator_token):
        raise Unauthenticated("send Authorization: Bearer <operator token>")


class OperatorNowController(Controller):
    path = "/api/operator"
    tags = ("operator",)
    guards = [operator_guard]  # noqa: RUF012 - Litestar's class attribute
    security = [{"operator": []}]  # noqa: RUF012 - Litestar's class attribute

    @get(
        "/now",
        operation_id="getSiteNow",
        summary="What the site is doing now, over all instances (operator)",
        description="The matches being played (a player at the table, a seat's grace "
        "running or a move due: the CPUs' and stand-ins' matches too, finished ones not) and "
        "how many of them only CPUs play, players at tables and in the lobby, the arenas "
        "running now. The ranking service's live view (`getLiveView`) shows it on the "
        "dashboard.",
    )
    async def now(self, service: Service) -> SiteNowOut:
        return await service.site_now.read()
