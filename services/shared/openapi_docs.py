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

`truthful_errors(app)` corrects what Litestar generates by itself: for every route with
parameters it declares a 400 in its own shape (`{status_code, detail, extra}`), which no
route of ours answers (a bad query or path value is 422 `invalid` in `ErrorBody`'s shape,
`services/shared/errors.py`). It drops that 400 and declares the 422 instead, so every
declared 4xx is an `ErrorBody`.
"""

from __future__ import annotations

import functools
import html
from collections.abc import Mapping
from importlib import resources
from typing import Any

from litestar import Litestar, Request, Response, Router, get
from litestar.datastructures import CacheControlHeader
from litestar.openapi import OpenAPIConfig
from litestar.openapi.plugins import JsonRenderPlugin, RedocRenderPlugin
from litestar.openapi.spec import (
    Components,
    OpenAPIMediaType,
    OpenAPIResponse,
    Reference,
    SecurityScheme,
)

from services.shared.pages import PAGE_HEADERS

__all__ = ["REDOC_VERSION", "SCHEMA_CSP", "openapi_config", "truthful_errors"]

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


def openapi_config(title: str, security_schemes: Mapping[str, SecurityScheme]) -> OpenAPIConfig:
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
        components=Components(security_schemes=dict(security_schemes)),
        render_plugins=[LocalRedoc(), JsonRenderPlugin()],
        openapi_router=router,
    )


_ERROR_REF = "#/components/schemas/ErrorBody"


def _is_error_body(response: Any) -> bool:
    content = getattr(response, "content", None) or {}
    return any(
        isinstance(media.schema, Reference) and media.schema.ref == _ERROR_REF
        for media in content.values()
    )


def truthful_errors(app: Litestar) -> None:
    """Make every declared 4xx of `app`'s OpenAPI document the `ErrorBody` it really is
    (see the module docstring). Call once, after the app is built."""
    document = app.openapi_schema  # built once and cached: edited in place
    for item in (document.paths or {}).values():
        for method in ("get", "put", "post", "delete", "patch", "head", "options"):
            operation = getattr(item, method, None)
            if operation is None or not operation.responses:
                continue
            responses = operation.responses
            default_400 = responses.get("400")
            if default_400 is not None and not _is_error_body(default_400):
                del responses["400"]
            parameters = operation.parameters or []
            has_values = any(getattr(p, "param_in", None) == "query" for p in parameters)
            has_values |= any(
                getattr(p, "param_in", None) == "path" and _typed(p) for p in parameters
            )
            if has_values and "422" not in responses:
                responses["422"] = OpenAPIResponse(
                    description="A query or path value has the wrong type or is out of "
                    "range (`invalid`, `field` names it)",
                    content={"application/json": OpenAPIMediaType(schema=Reference(_ERROR_REF))},
                )
            # Every route is behind the per-client budgets (services/shared/limits.py), and
            # every request's head and body must arrive in time: any of them may say so.
            if "429" not in responses:
                responses["429"] = OpenAPIResponse(
                    description="Too many requests from this client (`too_many_requests`); "
                    "`Retry-After` says when to try again",
                    content={"application/json": OpenAPIMediaType(schema=Reference(_ERROR_REF))},
                )
            if method in ("post", "put", "patch") and "408" not in responses:
                responses["408"] = OpenAPIResponse(
                    description="The request body did not arrive in time (`request_timeout`)",
                    content={"application/json": OpenAPIMediaType(schema=Reference(_ERROR_REF))},
                )
            bad = [s for s, r in responses.items() if s.startswith("4") and not _is_error_body(r)]
            if bad:  # pragma: no cover - a route declared a 4xx of another shape
                raise RuntimeError(f"{operation.operation_id}: {bad} are not ErrorBody")


def _typed(parameter: Any) -> bool:
    """Whether a path parameter can fail validation (anything but a plain string)."""
    return getattr(getattr(parameter, "schema", None), "type", None) not in (None, "string")
