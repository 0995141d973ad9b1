"""The service's own pages: a landing page at `/` and a health check at `/healthz`."""

from __future__ import annotations

import sqlalchemy as sa
from litestar import MediaType, Response, get

from services.match.players import Service
from services.shared.errors import HEALTH_RESPONSES

__all__ = ["healthz", "index"]

_INDEX = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Ludo</title><link rel="icon" href="data:,">
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:3rem auto;padding:0 1rem}
code{background:#f3f3f3;padding:0 .25rem}</style></head>
<body><h1>Ludo</h1>
<p>The match service is running. Players are guests: <code>POST /api/players</code> gives a
token; parties, matches, live updates and the rules oracle are described in the
<a href="/schema">API documentation</a> (a page that loads its viewer, Redoc, from a CDN;
the OpenAPI document itself, which needs nothing else, is
<a href="/schema/openapi.json">/schema/openapi.json</a>).</p>
<p>Open parties: <a href="/api/parties">/api/parties</a>.</p>
<p>Any match can be replayed at <code>/replay/&lt;match id&gt;</code>: the board at every
step, the legal moves of every roll, and every die checked against the revealed seed in
your browser. Its replay file (<code>/api/matches/&lt;match id&gt;/replay</code>) verifies
offline with <code>ludo replay verify</code>.</p>
</body></html>
"""


@get("/", media_type=MediaType.HTML, include_in_schema=False, sync_to_thread=False)
def index() -> str:
    """The landing page."""
    return _INDEX


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
