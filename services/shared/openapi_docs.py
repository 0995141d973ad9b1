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

`truthful_errors(app)` writes each operation's error answers: every status it can answer
is `ErrorBody` whose `error` is an enum of the codes it can answer with that status (each
code's meaning in the description and as an example: `services/shared/error_codes.py`).
The codes are those its route declares (`error_responses`, what its handler raises) and
those of the edge for its kind (`edge_codes`: the rate limiter's on every route, a missing
token's where a token is asked for, a bad query or path value's, a bad body's on routes
that read one, the database's). Litestar's own 400 (`{status_code, detail, extra}`, which
no route of ours answers) is dropped.
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
    Example,
    OpenAPIMediaType,
    OpenAPIResponse,
    OpenAPIType,
    Reference,
    Schema,
    SecurityScheme,
)

from services.shared.error_codes import BODY_CODES, ERROR_CODES, codes_by_status
from services.shared.errors import describe_codes
from services.shared.pages import PAGE_HEADERS

__all__ = [
    "REDOC_VERSION",
    "SCHEMA_CSP",
    "edge_codes",
    "error_codes_of",
    "openapi_config",
    "truthful_errors",
]

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
_BODY_METHODS = ("post", "put", "patch", "delete")
# Operations whose handlers never reach the database (the rules are pure, the health
# checks answer their own 503): no `database_unavailable` / `database_busy` for them.
_NO_DATABASE = frozenset({"rulesOptions", "rulesMoves", "health", "rankingHealth"})


def _is_error_body(response: Any) -> bool:
    content = getattr(response, "content", None) or {}
    return any(
        isinstance(media.schema, Reference) and media.schema.ref == _ERROR_REF
        for media in content.values()
    )


def _declared_codes(operation_id: str, status: str, response: Any) -> list[str]:
    """The codes a route declared for `status` (`error_responses`: one example each)."""
    media = (response.content or {}).get("application/json")
    examples = (media.examples or {}) if media is not None else {}
    codes = [
        str(e.value["error"])
        for e in examples.values()
        if isinstance(e, Example) and isinstance(e.value, dict)
    ]
    if not codes:  # pragma: no cover - a route declared an error without its codes
        raise RuntimeError(f"{operation_id}: {status} names no error code (error_responses)")
    return codes


def edge_codes(method: str, operation: Any) -> set[str]:
    """The codes any operation like `operation` can answer before (or around) its
    handler: the rate limiter's, a missing token's, a bad query or path value's, a bad
    body's, an unreachable database's."""
    codes = {"too_many_requests"}
    if operation.security:
        codes.add("unauthorized")
    parameters = operation.parameters or []
    if any(getattr(p, "param_in", None) == "query" for p in parameters) or any(
        getattr(p, "param_in", None) == "path" and _typed(p) for p in parameters
    ):
        codes.add("invalid")
    if method in _BODY_METHODS:
        codes.update(BODY_CODES)
    if operation.operation_id not in _NO_DATABASE:
        codes.update(("database_unavailable", "database_busy"))
    return codes


def _error_response(codes: list[str]) -> OpenAPIResponse:
    """A status answered with `codes`: `ErrorBody` whose `error` is one of them."""
    schema = Schema(
        all_of=[
            Reference(_ERROR_REF),
            Schema(
                type=OpenAPIType.OBJECT,
                properties={"error": Schema(type=OpenAPIType.STRING, enum=list(codes))},
            ),
        ]
    )
    examples: dict[str, Example | Reference] = {
        code: Example(summary=code, value={"error": code, "detail": ERROR_CODES[code].meaning})
        for code in codes
    }
    return OpenAPIResponse(
        description=describe_codes(codes),
        content={"application/json": OpenAPIMediaType(schema=schema, examples=examples)},
    )


def truthful_errors(app: Litestar) -> None:
    """Declare, for every operation of `app`'s OpenAPI document, each error code it can
    answer and no other (see the module docstring). Call once, after the app is built."""
    document = app.openapi_schema  # built once and cached: edited in place
    for item in (document.paths or {}).values():
        for method in ("get", "put", "post", "delete", "patch", "head", "options"):
            operation = getattr(item, method, None)
            if operation is None or not operation.responses:
                continue
            responses = operation.responses
            codes = edge_codes(method, operation)
            for status in [s for s in responses if s[0] in "45"]:
                response = responses[status]
                if _is_error_body(response):
                    codes.update(_declared_codes(str(operation.operation_id), status, response))
                    del responses[status]
                elif status == "400":  # Litestar's own, which no route of ours answers
                    del responses[status]
                elif status.startswith("4"):  # pragma: no cover - a 4xx of another shape
                    raise RuntimeError(f"{operation.operation_id}: {status} is not ErrorBody")
            for status, group in codes_by_status(codes).items():
                if str(status) in responses:  # pragma: no cover - a health check's own 503
                    raise RuntimeError(f"{operation.operation_id}: {status} declared twice")
                responses[str(status)] = _error_response(group)
            operation.responses = dict(sorted(responses.items()))


def error_codes_of(operation: Mapping[str, Any]) -> dict[str, set[str]]:
    """The codes an operation of a served document (JSON) declares, by status."""
    declared: dict[str, set[str]] = {}
    for status, response in operation.get("responses", {}).items():
        schema = response.get("content", {}).get("application/json", {}).get("schema", {})
        for part in schema.get("allOf", []):
            enum = part.get("properties", {}).get("error", {}).get("enum")
            if enum is not None:
                declared[status] = set(enum)
    return declared


def _typed(parameter: Any) -> bool:
    """Whether a path parameter can fail validation (anything but a plain string)."""
    return getattr(getattr(parameter, "schema", None), "type", None) not in (None, "string")
