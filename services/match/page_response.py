"""One of the site's pages as a response, under its CSP: `page`, and `stream_page` for a
page about one party, match or arena (the 404 page when there is none). The pages are
shells of web/pages/ (`services.shared.pages.page_response`), whichever capability serves
them."""

from __future__ import annotations

from collections.abc import Awaitable

from litestar import Response

from domain.errors import NotFound
from services.shared.pages import page_response

__all__ = ["page", "stream_page"]


def page(name: str, status: int = 200) -> Response[str]:
    """The page `name` (web/pages/) under its CSP."""
    return page_response(name, status)


async def stream_page(found: Awaitable[object], name: str) -> Response[str]:
    """The page `name` when `found`, the service's read of the party or match it shows,
    finds it; else (an unknown or malformed id: `NotFound`) the 404 page."""
    try:
        await found
    except NotFound:
        return page("not_found.html", status=404)
    return page(name)
