"""The API documentation at `/schema` of both services in a real browser: Debian's
Chromium driven by Playwright, as in tests/services/match/test_replay_pages.py.

Each service runs under uvicorn on a loopback port (the live tests' `Instance`). Every
request the page makes to anywhere but that origin is recorded and refused, so a viewer,
font or favicon loaded from a CDN fails the test, as it would leave the page blank offline.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from playwright.async_api import Page, Route, expect

from services.match.app import create_app as match_app
from services.ranking.app import create_app as ranking_app
from services.shared.openapi_docs import REDOC_VERSION, SCHEMA_CSP
from services.shared.settings import Settings
from tests.browser import console_errors, new_page, requires_chromium
from tests.services.match.test_live import Instance

# Per service: one operation summary, as the viewer shows it.
SUMMARIES = {
    "match": "Create a guest player",
    "ranking": "The rating changes of one match",
}
ASSET = f"/schema/assets/redoc-{REDOC_VERSION}/redoc.standalone.js"


@pytest.fixture(params=sorted(SUMMARIES))
def service(
    request: pytest.FixtureRequest, database_url: str, tmp_path: Path
) -> Iterator[tuple[str, str]]:
    """The service named by the parameter, running: its name and base URL."""
    settings = Settings(data_dir=tmp_path, database_url=database_url, scheduler=False)
    app = match_app(settings) if request.param == "match" else ranking_app(settings, consume=False)
    with Instance(settings, app) as instance:
        yield request.param, instance.http


@pytest.fixture
async def opened(service: tuple[str, str]) -> AsyncIterator[tuple[Page, list[str], list[str]]]:
    """`/schema` in Chromium with every off-origin request refused: the page, the errors it
    logs and the off-origin URLs it tried, from its first load on."""
    base = service[1]
    external: list[str] = []

    async def only_origin(route: Route) -> None:
        if route.request.url.startswith(base + "/"):
            await route.continue_()
        else:
            external.append(route.request.url)
            await route.abort()

    async with new_page() as page:
        await page.route("**/*", only_origin)
        errors = console_errors(page)
        await page.goto(f"{base}/schema")
        yield page, errors, external


@pytest.mark.anyio
@pytest.mark.slow
@requires_chromium
async def test_schema_renders_its_operations_offline(
    service: tuple[str, str], opened: tuple[Page, list[str], list[str]]
) -> None:
    """`/schema` renders the operations with the viewer served by the service itself:
    no off-origin request, no CSP violation or script error."""
    page, errors, external = opened
    summary = SUMMARIES[service[0]]
    await expect(page.locator("h2", has_text=summary)).to_be_visible()
    await page.wait_for_load_state("networkidle")
    assert external == []
    assert errors == []


@pytest.mark.anyio
@pytest.mark.slow
@requires_chromium
async def test_schema_search_runs_under_the_csp(
    service: tuple[str, str], opened: tuple[Page, list[str], list[str]]
) -> None:
    """The viewer's search (a Web Worker built from a Blob) works under the page's CSP."""
    page, errors, external = opened
    summary = SUMMARIES[service[0]]
    await page.get_by_placeholder("Search...").fill(summary.split()[-1])
    await expect(page.locator("[data-role='search:results']")).to_contain_text(summary)
    assert external == []
    assert errors == []


def test_schema_responses_carry_the_csp(service: tuple[str, str]) -> None:
    """The page, the OpenAPI document and the viewer's bundle all carry the strict CSP,
    and the page names no other origin; the bundle (versioned URL) may be cached."""
    with httpx.Client(base_url=service[1], timeout=30) as http:
        page = http.get("/schema")
        assert page.status_code == 200
        assert "http://" not in page.text
        assert "https://" not in page.text
        assert "<script>" not in page.text  # no inline script: script-src 'self' suffices
        for path in ("/schema", "/schema/openapi.json", ASSET):
            r = http.get(path)
            assert r.status_code == 200, path
            assert r.headers["content-security-policy"] == SCHEMA_CSP, path
            assert r.headers["x-content-type-options"] == "nosniff", path
        bundle = http.get(ASSET)
        assert bundle.headers["content-type"].startswith("text/javascript")
        assert bundle.headers["cache-control"] == "max-age=86400"
        assert http.get("/schema").headers["cache-control"] == "no-store"
