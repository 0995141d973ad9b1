"""One of the site's pages as a response, under its CSP: `page`, and `stream_page` for a
page about one party, match or arena (the 404 page when there is none). The pages are
shells of web/pages/ (`services.shared.pages.page_response`), whichever capability serves
them."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from litestar import Request, Response

from domain.errors import NotFound
from services.shared.pages import page_response, reader_language

__all__ = ["page", "stream_page"]


def page(request: Request[Any, Any, Any], name: str, status: int = 200) -> Response[str]:
    """The page `name` (web/pages/) under its CSP, in the language of `request`'s reader."""
    return page_response(name, reader_language(request), status)


async def stream_page(
    request: Request[Any, Any, Any], found: Awaitable[object], name: str
) -> Response[str]:
    """The page `name` when `found`, the service's read of the party or match it shows,
    finds it; else (an unknown or malformed id: `NotFound`) the 404 page."""
    try:
        await found
    except NotFound:
        return page(request, "not_found.html", status=404)
    return page(request, name)
