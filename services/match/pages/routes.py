"""The site's pages and the health check.

- `/` the lobby (`lobby.html`): a name kept on the device, a new party with every setting
  of docs/rules.md#options-local-rules-and-presets, the open parties live;
- `/party/{id}` the table (`table.html`): the party's seats, then its match, the result
  and もう一度; `/match/{id}` the same page for one match (spectators, finished matches);
- `/leaderboard` and `/players/{id}` (`ratings.html`): the public ratings, read from the
  ranking service through `/api/ratings/*`;
- `/rules` (`rules.html`): the rules and how to play, in both languages;
- `/tournaments` and `/tournament/{id}` (`arenas.html`): the arena tournaments listed (and a
  private one created), one arena live (docs/arenas.md);
- `/healthz`.

Every page is a shell of web/pages/ (its script an ES module of web/js/) served under the
nonce-based CSP of `services.shared.pages`; the replay viewer and dispute report (services/match/
replays/routes.py) are served the same way (`services/match/page_response.py`). The pages
read through the parts they name (`parties`, `matches`, `arenas`, `guests`), never the store. An
unknown or malformed id is the site's 404 page (`not_found.html`), as is any unknown path
a browser asks for (not under `/static/`: a missing file is JSON 404).
"""

from __future__ import annotations

from typing import Any

from litestar import MediaType, Request, Response, get
from litestar.di import NamedDependency
from litestar.exceptions import NotFoundException
from litestar.params import FromPath
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.errors import AppError, NotFound
from services.match.arenas.service import Arenas
from services.match.guests import Guests
from services.match.ids import check_id
from services.match.page_response import page, stream_page
from services.match.parties.service import PartyCommands
from services.match.play.reads import MatchReads
from services.shared.database import reachable
from services.shared.errors import HEALTH_RESPONSES, http_error

__all__ = [
    "arena_page",
    "arenas_page",
    "healthz",
    "index",
    "leaderboard_page",
    "match_page",
    "not_found",
    "party_page",
    "player_page",
    "rules_page",
]


def not_found(request: Request[Any, Any, Any], exc: NotFoundException) -> Response[Any]:
    """An unknown route: the site's 404 page for a browser asking for a page, the JSON
    error for everything else (the API, sockets, tools)."""
    path = request.url.path
    wants_page = "text/html" in request.headers.get("accept", "")
    if wants_page and not path.startswith(("/api/", "/ws/", "/schema", "/static/")):
        return page(request, "not_found.html", status=404)
    return http_error(request, exc)


@get("/", media_type=MediaType.HTML, include_in_schema=False, sync_to_thread=False)
def index(request: Request[Any, Any, Any]) -> Response[str]:
    """The lobby."""
    return page(request, "lobby.html")


@get("/party/{party_id:str}", media_type=MediaType.HTML, include_in_schema=False)
async def party_page(
    party_id: FromPath[str],
    parties: NamedDependency[PartyCommands],
    request: Request[Any, Any, Any],
) -> Response[str]:
    """A party's table: seats, then its match live, the result and もう一度."""
    return await stream_page(request, parties.load(party_id), "table.html")


@get("/match/{match_id:str}", media_type=MediaType.HTML, include_in_schema=False)
async def match_page(
    match_id: FromPath[str], matches: NamedDependency[MatchReads], request: Request[Any, Any, Any]
) -> Response[str]:
    """One match live (read-only unless this device's guest holds a seat)."""
    return await stream_page(request, matches.state(match_id), "table.html")


@get("/leaderboard", media_type=MediaType.HTML, include_in_schema=False, sync_to_thread=False)
def leaderboard_page(request: Request[Any, Any, Any]) -> Response[str]:
    """The public leaderboard (player ratings of ranked play)."""
    return page(request, "ratings.html")


@get("/rules", media_type=MediaType.HTML, include_in_schema=False, sync_to_thread=False)
def rules_page(request: Request[Any, Any, Any]) -> Response[str]:
    """The rules of Ludo and how to play, with this site's defaults and local rules."""
    return page(request, "rules.html")


@get("/tournaments", media_type=MediaType.HTML, include_in_schema=False, sync_to_thread=False)
def arenas_page(request: Request[Any, Any, Any]) -> Response[str]:
    """The arenas: upcoming, live and finished, and the form of a private arena."""
    return page(request, "arenas.html")


@get("/tournament/{arena_id:str}", media_type=MediaType.HTML, include_in_schema=False)
async def arena_page(
    arena_id: FromPath[str], arenas: NamedDependency[Arenas], request: Request[Any, Any, Any]
) -> Response[str]:
    """One arena live: its clock, standings, matches, the player's own state; an unknown
    or malformed id is the 404 page."""
    try:
        known = check_id(arena_id, "arena")
    except NotFound:
        return page(request, "not_found.html", status=404)
    return await stream_page(request, arenas.state(known), "arenas.html")


@get("/players/{player_id:str}", media_type=MediaType.HTML, include_in_schema=False)
async def player_page(
    player_id: FromPath[str], guests: NamedDependency[Guests], request: Request[Any, Any, Any]
) -> Response[str]:
    """One player's rating and its history (the page asks the ranking service); an
    unknown or malformed id is the 404 page."""
    try:
        known = await guests.exists(check_id(player_id, "player"))
    except AppError:
        known = False
    return page(request, "ratings.html") if known else page(request, "not_found.html", status=404)


@get(
    "/healthz",
    operation_id="health",
    tags=["service"],
    summary="Liveness and database check",
    responses=HEALTH_RESPONSES,
)
async def healthz(engine: NamedDependency[AsyncEngine]) -> Response[dict[str, str]]:
    """200 when the service can reach its database, 503 otherwise."""
    if not await reachable(engine):
        return Response({"status": "database unreachable"}, status_code=503)
    return Response({"status": "ok"})
