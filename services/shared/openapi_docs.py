"""The API documentation of both services at `/schema`, served entirely by the service.

Litestar's default OpenAPI pages load their viewers (Redoc, Swagger UI, …), fonts and a
favicon from CDNs, so offline `/schema` was blank, and the site made requests to third
parties. Here `/schema` (and `/schema/redoc`) is a page of our own that loads Redoc from
this package: `openapi_assets/redoc.standalone.js`, vendored from npm (its README says the
version, the licence, why Redoc, and the one string changed in it: the URL of a logo on
Redocly's CDN). The page has no inline script: Redoc's standalone
bundle renders the `<redoc spec-url=…>` element by itself, reading `/schema/openapi.json`.
No other viewer is served (`/schema/swagger` and the like, which Litestar serves by
default, are 404), since each would load from a CDN.

Every response under `/schema` (the page, the document, the asset) carries `SCHEMA_CSP`.
"""

from __future__ import annotations

import functools
import html
from importlib import resources
from typing import Any

from litestar import Request, Response, Router, get
from litestar.datastructures import CacheControlHeader
from litestar.openapi import OpenAPIConfig
from litestar.openapi.plugins import JsonRenderPlugin, RedocRenderPlugin
from litestar.openapi.spec import Components, SecurityScheme

from services.shared.pages import PAGE_HEADERS

__all__ = ["REDOC_VERSION", "SCHEMA_CSP", "openapi_config"]

REDOC_VERSION = "2.5.4"
_REDOC_FILE = "redoc.standalone.js"
# Under the router's path; the version is in the URL, so a browser may keep the file.
_REDOC_ROUTE = f"/assets/redoc-{REDOC_VERSION}/{_REDOC_FILE}"

# As strict as Redoc allows. Scripts: only files from this origin (the bundle; the page
# has no inline script). Styles: 'unsafe-inline' because Redoc styles itself with
# styled-components, which inserts <style> elements whose content depends on what is
# rendered (no fixed hash to allow), and sets style attributes. Workers: `blob:` because
# Redoc's search index runs in a Web Worker that the bundle builds from a Blob of its own
# code. connect-src 'self': Redoc fetches /schema/openapi.json. img-src data:: the empty
# favicon (which spares the browser a /favicon.ico request) and the `data:,` that stands
# for Redocly's logo in the bundle (see openapi_assets/README.md).
SCHEMA_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; "
    "connect-src 'self'; img-src data:; worker-src blob:; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)


@functools.cache
def _asset(name: str) -> bytes:
    return (
        resources.files(__package__ or "services.shared")
        .joinpath("openapi_assets", name)
        .read_bytes()
    )


class LocalRedoc(RedocRenderPlugin):
    """Redoc from this package instead of a CDN, on a page without inline script."""

    def __init__(self) -> None:
        super().__init__(path=["/", "/redoc"], google_fonts=False, js_url=_REDOC_ROUTE)

    def render(self, request: Request[Any, Any, Any], openapi_schema: dict[str, Any]) -> bytes:
        title = html.escape(str(openapi_schema["info"]["title"]))
        spec = html.escape(self.get_openapi_json_route(request))
        js = html.escape(self.js_url)
        return (
            '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<title>{title}</title><link rel="icon" href="data:,"></head>'
            f'<body><redoc spec-url="{spec}"></redoc><script src="{js}"></script></body></html>'
        ).encode()

    def receive_router(self, router: Router) -> None:
        """Serve the bundle under the router, and point the page at it."""
        self.js_url = router.path.rstrip("/") + _REDOC_ROUTE

        @get(
            _REDOC_ROUTE,
            media_type="text/javascript",
            cache_control=CacheControlHeader(max_age=86400),
            include_in_schema=False,
            sync_to_thread=False,
        )
        def redoc_bundle() -> Response[bytes]:
            return Response(_asset(_REDOC_FILE))

        router.register(redoc_bundle)


def openapi_config(title: str, security_schemes: dict[str, SecurityScheme]) -> OpenAPIConfig:
    """The OpenAPI configuration of a service: its document at `/schema/openapi.json`
    and Redoc at `/schema`, with no request off the site."""
    router = Router(
        "/schema",
        route_handlers=[],
        include_in_schema=False,
        response_headers={"Content-Security-Policy": SCHEMA_CSP, **PAGE_HEADERS},
    )
    return OpenAPIConfig(
        title=title,
        version="0.1.0",
        components=Components(security_schemes=security_schemes),
        render_plugins=[LocalRedoc(), JsonRenderPlugin()],
        openapi_router=router,
    )
