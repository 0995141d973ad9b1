"""The operator dashboard's routes: the page (`GET /dashboard`, `/` leads to it) and its
live view (`GET /api/ranking/live`, behind the operator guard). The page is a shell,
web/pages/dashboard.html (served by services/shared/pages.py); its module,
web/js/dashboard.js, draws SVG charts from the `/api/ranking` endpoints and asks for the
token. The live view's reads are the `live` dependency (services/ranking/dashboard/
service.py), provided by services/ranking/app.py.
"""

from __future__ import annotations

from typing import Any

from litestar import Controller, MediaType, Request, Response, get
from litestar.di import NamedDependency
from litestar.response import Redirect

from services.ranking.dashboard.schemas import LiveViewOut
from services.ranking.dashboard.service import LiveView
from services.ranking.guards import operator_guard
from services.shared.pages import page_response, reader_language

__all__ = ["LiveController", "dashboard", "index"]


class LiveController(Controller):
    path = "/api/ranking"
    tags = ("ranking",)
    guards = [operator_guard]  # noqa: RUF012 - Litestar's class attribute
    security = [{"operator": []}]  # noqa: RUF012 - Litestar's class attribute

    @get(
        "/live",
        operation_id="getLiveView",
        summary="The site now: play, instances, abandonment per hour, lags, database",
        description="What the operator's dashboard shows live (docs/operations.md, The "
        "live view). A part that cannot be read says why in its `unavailable`; the others "
        "are answered.",
    )
    async def live(self, live: NamedDependency[LiveView]) -> LiveViewOut:
        return await live.read()


@get("/", include_in_schema=False, sync_to_thread=False)
def index() -> Redirect:
    """The ranking service has one page: `/` leads to it."""
    return Redirect("/dashboard")


@get("/dashboard", tags=["service"], include_in_schema=False, media_type=MediaType.HTML)
async def dashboard(request: Request[Any, Any, Any]) -> Response[str]:
    """The operator dashboard: public HTML; its data calls carry the operator token."""
    return page_response("dashboard.html", reader_language(request))
