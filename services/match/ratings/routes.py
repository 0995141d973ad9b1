"""`GET /api/ratings/{path}`: the ranking service's public rating reads, through this origin.

The pages are served here and their CSP allows `connect-src 'self'` only, while the
ratings live in the ranking service (another process, `LUDO_RANKING_URL`; `ludo up` sets
it). This forwards GETs under `/api/ratings/` to the same path and query there and passes
the answer through: its status, its JSON body and the headers in `PASSED_HEADERS` (how
long a cache may keep it, `X-Ludo-Evaluator` of an analysis, when to retry). Only GET; the
path is checked segment by segment (letters, digits, `-` and `_`), so nothing can climb
out of `/api/ratings/` (`..`, encoded slashes): such paths are 404 here and never reach
the ranking service's operator routes. Unset, unreachable, slow (over `TIMEOUT` seconds)
or answering something other than JSON: 503 `{"error": "ranking_unavailable", ...}`
with `Retry-After`.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator, Callable
from typing import Any, Final

import httpx
import structlog
from litestar import Litestar, MediaType, Request, Response, get
from litestar.params import FromPath

from domain.errors import NotFound
from services.shared.errors import ErrorBody, error_responses
from services.shared.serving import KEEP_ALIVE
from services.shared.settings import Settings

__all__ = [
    "PASSED_HEADERS",
    "TIMEOUT",
    "ratings_proxy",
    "ratings_proxy_lifespan",
    "upstream_path",
]

TIMEOUT: Final = 3.0
RETRY_AFTER: Final = "5"
# The ranking service's headers a client of this origin is promised (docs/api.md,
# docs/analysis.md), in lower case: a response's own header replaces the app's
# `Cache-Control: no-store` only under the very name Litestar gives it, `cache-control`;
# under another spelling both would be sent.
PASSED_HEADERS: Final = ("cache-control", "x-ludo-evaluator", "retry-after")
# The proxy drops an idle connection well before the ranking service does (KEEP_ALIVE, its
# uvicorn's): with equal timeouts a request could go out on a connection the server was
# closing that instant, and fail with a ReadError. A connection that breaks anyway (the
# service restarted) is retried once: the proxy only ever sends GETs.
_KEEP_IDLE: Final = KEEP_ALIVE / 2
_BROKEN: Final = (httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError)
_SEGMENT: Final = re.compile(r"[A-Za-z0-9_-]{1,200}")
_log = structlog.get_logger("services.match.ratings.routes")


def upstream_path(path: str) -> str | None:
    """`/api/ratings/<path>` on the ranking service, or None when `path` (as routed,
    percent-decoded) has an empty, dot or otherwise odd segment."""
    segments = path.removeprefix("/").split("/")
    if not all(_SEGMENT.fullmatch(s) for s in segments):
        return None
    return "/api/ratings/" + "/".join(segments)


def ratings_proxy_lifespan(settings: Settings) -> Callable[[Litestar], Any]:
    """One `httpx.AsyncClient` per app (None without `LUDO_RANKING_URL`)."""

    @contextlib.asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        if settings.ranking_url is None:
            app.state.ratings_client = None
            yield
            return
        async with httpx.AsyncClient(
            base_url=settings.ranking_url.rstrip("/"),
            timeout=httpx.Timeout(TIMEOUT),
            limits=httpx.Limits(keepalive_expiry=_KEEP_IDLE),
            follow_redirects=False,
        ) as client:
            app.state.ratings_client = client
            yield

    return lifespan


def _unavailable(detail: str) -> Response[Any]:
    return Response(
        ErrorBody(error="ranking_unavailable", detail=detail),
        status_code=503,
        media_type=MediaType.JSON,
        headers={"Retry-After": RETRY_AFTER},
    )


@get(
    "/api/ratings/{path:path}",
    operation_id="proxyRatings",
    tags=["ratings"],
    summary="The ranking service's public ratings (/api/ratings/*), through this origin",
    description="Forwards to the ranking service's `GET /api/ratings/{path}` with the same "
    "query and passes its status, JSON body and headers (`Cache-Control`, `X-Ludo-Evaluator`, "
    "`Retry-After`) through: `leaderboard`, `players/{player_id}`, "
    "`matches/{match_id}` (docs/api.md). 503 when the ranking service is not configured or "
    "does not answer.",
    # The proxy's own codes, and those of the ranking service's public reads it passes on.
    responses=error_responses("not_found", "not_analysed", "invalid", "ranking_unavailable"),
)
async def ratings_proxy(request: Request[Any, Any, Any], path: FromPath[str]) -> Response[Any]:
    target = upstream_path(path)
    if target is None:
        raise NotFound("no such ratings route")
    client: httpx.AsyncClient | None = request.app.state.ratings_client
    if client is None:
        return _unavailable("the ranking service is not configured (LUDO_RANKING_URL)")
    query = request.scope.get("query_string", b"").decode("latin-1")
    try:
        try:
            answer = await client.get(target, params=httpx.QueryParams(query))
        except _BROKEN:
            answer = await client.get(target, params=httpx.QueryParams(query))
    except httpx.HTTPError as exc:
        _log.warning("ranking_unreachable", error_type=type(exc).__name__)
        return _unavailable("the ranking service does not answer; try again shortly")
    if not answer.headers.get("content-type", "").startswith("application/json"):
        _log.warning("ranking_bad_answer", status=answer.status_code)
        return _unavailable("the ranking service gave an unexpected answer")
    headers = {name: answer.headers[name] for name in PASSED_HEADERS if name in answer.headers}
    return Response(
        answer.content, status_code=answer.status_code, media_type=MediaType.JSON, headers=headers
    )
