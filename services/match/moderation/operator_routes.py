"""The match service's operator routes: one guard for all of them (the operator token), and
`GET /api/operator/now`, what the site is doing now (moderation/site_now.py). The dispute report
(replays/routes.py) uses the same guard."""

from __future__ import annotations

from litestar import Controller, get
from litestar.di import NamedDependency

from services.match.callers import operator_guard
from services.match.moderation.schemas import SiteNowOut
from services.match.moderation.site_now import SiteNow

__all__ = ["OperatorNowController"]


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
    async def now(self, site_now: NamedDependency[SiteNow]) -> SiteNowOut:
        return await site_now.read()
