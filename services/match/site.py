"""The site's pages and the health check.

- `/` the lobby (`lobby.html`): a name kept on the device, a new party with every setting
  of RULES.md §5, the open parties live;
- `/party/{id}` the table (`table.html`): the party's seats, then its match, the result
  and もう一度; `/match/{id}` the same page for one match (spectators, finished matches);
- `/leaderboard` and `/players/{id}` (`ratings.html`): the public ratings, read from the
  ranking service through `/api/ratings/*`;
- `/rules` (`rules.html`): the rules and how to play, in both languages;
- `/healthz`.

Every page is one self-contained HTML file served under the hash-based CSP of
`services.shared.pages`; the replay viewer and dispute report (services/match/
replays_web.py) are served the same way through `stream_page`. An unknown or malformed id
is a 404 page.
"""

from __future__ import annotations

import sqlalchemy as sa
from litestar import MediaType, Response, get
from litestar.params import FromPath

from services.match.players import Service
from services.match.service import MatchService, check_id, match_stream, party_stream
from services.shared.errors import HEALTH_RESPONSES, AppError
from services.shared.pages import PAGE_HEADERS, inline_page

__all__ = [
    "healthz",
    "index",
    "leaderboard_page",
    "match_page",
    "page",
    "party_page",
    "player_page",
    "rules_page",
    "stream_page",
]

_NOT_FOUND = (
    "<!doctype html><html lang=en><head><meta charset=utf-8><title>No such {what}</title>"
    "</head><body><h1>No such {what}</h1><p>There is no {what} with this id. "
    '<a href="/">Back to the lobby</a></p></body></html>'
)


def page(name: str) -> Response[str]:
    """The page `name` of this package under its CSP."""
    html, csp = inline_page("services.match", name)
    return Response(
        html, media_type=MediaType.HTML, headers={"Content-Security-Policy": csp, **PAGE_HEADERS}
    )


async def stream_page(service: MatchService, raw_id: str, what: str, name: str) -> Response[str]:
    """The page `name` when the party or match (`what`) of `raw_id` exists, else a 404 page."""
    stream_of = party_stream if what == "party" else match_stream
    try:
        stream = stream_of(check_id(raw_id, what))
    except AppError:
        stream = None
    if stream is not None:
        async with service.engine.connect() as conn:
            found = await conn.scalar(
                sa.text("SELECT 1 FROM events WHERE stream_id = :s AND stream_version = 0"),
                {"s": stream},
            )
        if found:
            return page(name)
    return Response(
        _NOT_FOUND.format(what=what),
        status_code=404,
        media_type=MediaType.HTML,
        headers={"Content-Security-Policy": "default-src 'none'", **PAGE_HEADERS},
    )


@get("/", media_type=MediaType.HTML, include_in_schema=False, sync_to_thread=False)
def index() -> Response[str]:
    """The lobby."""
    return page("lobby.html")


@get("/party/{party_id:str}", media_type=MediaType.HTML, include_in_schema=False)
async def party_page(party_id: FromPath[str], service: Service) -> Response[str]:
    """A party's table: seats, then its match live, the result and もう一度."""
    return await stream_page(service, party_id, "party", "table.html")


@get("/match/{match_id:str}", media_type=MediaType.HTML, include_in_schema=False)
async def match_page(match_id: FromPath[str], service: Service) -> Response[str]:
    """One match live (read-only unless this device's guest holds a seat)."""
    return await stream_page(service, match_id, "match", "table.html")


@get("/leaderboard", media_type=MediaType.HTML, include_in_schema=False, sync_to_thread=False)
def leaderboard_page() -> Response[str]:
    """The public leaderboard (player ratings of ranked play)."""
    return page("ratings.html")


@get("/rules", media_type=MediaType.HTML, include_in_schema=False, sync_to_thread=False)
def rules_page() -> Response[str]:
    """The rules of Ludo and how to play, with this site's defaults and local rules."""
    return page("rules.html")


@get("/players/{player_id:str}", media_type=MediaType.HTML, include_in_schema=False)
async def player_page(player_id: FromPath[str]) -> Response[str]:
    """One player's rating and its history (the page asks the ranking service; an unknown
    player is the page's own "not found")."""
    return page("ratings.html")


@get(
    "/healthz",
    operation_id="health",
    tags=["service"],
    summary="Liveness and database check",
    responses=HEALTH_RESPONSES,
)
async def healthz(service: Service) -> Response[dict[str, str]]:
    """200 when the service can reach its database, 503 otherwise."""
    try:
        async with service.engine.connect() as conn:
            await conn.execute(sa.text("SELECT 1"))
    except Exception:
        return Response({"status": "database unreachable"}, status_code=503)
    return Response({"status": "ok"})
